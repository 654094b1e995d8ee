package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/setting"
	"github.com/commtune/commtune/internal/units"
)

const multirailUsage = "[--sizes 1M,4M,16M] [--rounds 3] [--reps N] [--offload SIZE] [--busy PERIOD] [--json] [--in-job]"

// multirailMain is `commtune bench multirail`: ping-pong bandwidth over
// each rail alone and over all of them split three ways (iso, the N-rail
// weighted rule, chunks solved on the sampled curves), and with --offload
// the curves split posting its chunks from several cores, in one run.
func multirailMain(args []string) int {
	fs := newFlagSet("bench multirail", multirailUsage)
	sizesFlag := fs.String("sizes", "1M,4M,16M", "message sizes, comma-separated (K, M suffixes are binary)")
	rounds := fs.Int("rounds", 3, "interleaved rounds; each figure is the median over them")
	reps := fs.Int("reps", 0, "round trips per mode, size and round (0: enough to move about 32 MiB)")
	offloadFlag := fs.String("offload", "0", "add the mode split+offload: the curves split with chunks of at least this size, but the last, written by the rails' writer goroutines on other cores (0: no such mode)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	busy := fs.Duration("busy", 0, "instead: send the first size under the curves split for three periods of this length, a plain TCP stream saturating rail 0 during the second, and report each eighth of a period: bandwidth, rail 0's share, its learned correction and the share searched for it")
	inJob := fs.Bool("in-job", false, "be one of the two ranks of a job another launcher started (mpiexec -n 2 on two hosts joined by several rails); otherwise start two ranks here, over the rails COMMTUNE_RAILS names")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	sizes, err := units.ParseSizes(*sizesFlag)
	if err != nil {
		return usageError("bench multirail", "--sizes: %v", err)
	}
	cfg := bench.MultirailConfig{Rounds: *rounds, Reps: *reps}
	if cfg.Sizes, err = sizeList(sizes, 1<<30); err != nil {
		return usageError("bench multirail", "--sizes: %v", err)
	}
	if *rounds < 1 || *reps < 0 {
		return usageError("bench multirail", "--rounds must be at least 1 and --reps at least 0")
	}
	offload, err := units.ParseSize(*offloadFlag)
	if err != nil || offload > 1<<30 {
		return usageError("bench multirail", "--offload %q: want a size from 0 to 1G", *offloadFlag)
	}
	cfg.Offload = int(offload)
	if v := os.Getenv(commtune.EnvRails); !*inJob && len(strings.Split(v, ",")) < 2 {
		return usageError("bench multirail", "%v", setting.Bad(setting.Env(commtune.EnvRails, v),
			"at least two rails, comma-separated (or run with --in-job under a launcher)"))
	}
	if *busy < 0 {
		return usageError("bench multirail", "--busy must be positive")
	}
	if *busy > 0 && cfg.Offload > 0 {
		return usageError("bench multirail", "--offload adds a mode to the ping-pong table; --busy runs the curves split alone")
	}
	if *busy > 0 {
		return twoRankBench("bench multirail", *inJob, *asJSON, []string{"bench", "multirail", "--in-job", "--sizes", *sizesFlag,
			"--busy", busy.String(), "--json=" + strconv.FormatBool(*asJSON)}, []string{commtune.EnvTransports + "=tcp"},
			func(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (*bench.BusyReport, error) {
				return bench.MultirailBusy(ctx, c, ep, cfg.Sizes[0], *busy)
			}, writeBusy)
	}
	return twoRankBench("bench multirail", *inJob, *asJSON, []string{"bench", "multirail", "--in-job", "--sizes", *sizesFlag,
		"--rounds", strconv.Itoa(*rounds), "--reps", strconv.Itoa(*reps), "--offload", strconv.Itoa(cfg.Offload),
		"--json=" + strconv.FormatBool(*asJSON)},
		[]string{commtune.EnvTransports + "=tcp"},
		func(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (*bench.MultirailReport, error) {
			return bench.Multirail(ctx, c, ep, cfg)
		},
		writeMultirail)
}

// writeMultirail prints one line per mode, bandwidths in MB/s by size,
// and each split's planned chunks.
func writeMultirail(w io.Writer, rep *bench.MultirailReport) error {
	fmt.Fprintf(w, "# commtune multirail ping-pong bandwidth (MB/s, median of %d rounds)\n", rep.Rounds)
	for i, r := range rep.Rails {
		fmt.Fprintf(w, "# rail%d: %s, learned correction ×%.2f\n", i, r, rep.Factors[i])
	}
	var sizes []int
	for _, r := range rep.Rows {
		if len(sizes) == 0 || r.Bytes > sizes[len(sizes)-1] {
			sizes = append(sizes, r.Bytes)
		} else {
			break
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "mode\t")
	for _, s := range sizes {
		fmt.Fprintf(tw, "%s\t", units.FormatSize(int64(s)))
	}
	fmt.Fprintln(tw, "planned split at the largest size\t")
	for i := 0; i < len(rep.Rows); i += len(sizes) {
		rows := rep.Rows[i:min(i+len(sizes), len(rep.Rows))]
		fmt.Fprintf(tw, "%s\t", rows[0].Mode)
		for _, r := range rows {
			fmt.Fprintf(tw, "%.1f\t", r.BandwidthMBps)
		}
		var parts []string
		for _, c := range rows[len(rows)-1].Chunks {
			parts = append(parts, units.FormatSize(int64(c)))
		}
		fmt.Fprintf(tw, "%s\t\n", strings.Join(parts, " + "))
	}
	return tw.Flush()
}

// writeBusy prints one line per window of a busy-rail run.
func writeBusy(w io.Writer, rep *bench.BusyReport) error {
	fmt.Fprintf(w, "# commtune multirail, curves split of %s messages (send + 8-byte ack); a TCP stream saturates rail 0 in the middle %.1f s\n",
		units.FormatSize(int64(rep.Bytes)), rep.Period)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "from ms\tstream\tsplit msgs\tsplit MB/s\trail0 alone\trail1 alone\tsplit/(sum)\trail0 share\trail0 correction\trail0 searched\t")
	for _, x := range rep.Windows {
		stream := ""
		if x.Busy {
			stream = "on"
		}
		ratio := 0.0
		if x.Rail0MBps > 0 && x.Rail1MBps > 0 {
			ratio = x.BandwidthMBps / (x.Rail0MBps + x.Rail1MBps)
		}
		fmt.Fprintf(tw, "%.0f\t%s\t%d\t%.1f\t%s\t%s\t%s\t%.2f\t×%.2f\t%s\t\n", x.StartMS, stream, x.Messages, x.BandwidthMBps,
			orDash(x.Rail0MBps, "%.1f"), orDash(x.Rail1MBps, "%.1f"), orDash(ratio, "%.2f"), x.Share0, x.Factor0, orDash(x.Searched0, "%.2f"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nBy period (bytes over time summed across its windows; under and after the stream without their first window):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "period\tsplit msgs\tsplit MB/s\trail0 alone\trail1 alone\tsplit/(sum)\trail0 share\t")
	for _, p := range rep.Phases {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%s\t%.2f\t\n", p.Name, p.Messages, p.BandwidthMBps,
			orDash(p.Rail0MBps, "%.1f"), orDash(p.Rail1MBps, "%.1f"), orDash(p.OfSum, "%.2f"), p.Share0)
	}
	return tw.Flush()
}

// orDash formats v, or "-" when there is none (a window without a probe).
func orDash(v float64, format string) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}
