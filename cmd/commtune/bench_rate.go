package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/units"
)

const rateUsage = "[--transport tcp|shm] [--sizes 8,64,256,1K] [--window 64] [--rounds 5] [--time 200ms] [--max 64K] [--json] [--in-job]"

// rateMain is `commtune bench rate`: the message rate of a window of small
// messages kept in flight from rank 0 to rank 1 (osu_bw's pattern), under
// the default scheduler strategy and under aggregation (seed 000 §II-D).
func rateMain(args []string) int {
	fs := newFlagSet("bench rate", rateUsage)
	transport := fs.String("transport", "tcp", "tcp or shm (two processes started here through the launcher; ignored with --in-job)")
	sizesFlag := fs.String("sizes", "8,64,256,1K", "message sizes, comma-separated (K, M suffixes are binary)")
	window := fs.Int("window", bench.DefaultRateWindow, "messages in flight per iteration")
	rounds := fs.Int("rounds", 5, "interleaved rounds; each figure is the median over them")
	dur := fs.Duration("time", bench.DefaultRateTime, "about how long each timed run of a size and mode lasts")
	maxFlag := fs.String("max", "64K", "the aggregate mode's frame bound (sched.Aggregate's Max)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	inJob := fs.Bool("in-job", false, "be one of the two ranks of a job another launcher started (mpiexec -n 2), over whatever transport the job has; otherwise start two ranks here")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	sizes, err := units.ParseSizes(*sizesFlag)
	if err != nil {
		return usageError("bench rate", "--sizes: %v", err)
	}
	aggMax, err := units.ParseSize(*maxFlag)
	if err != nil || aggMax < 1 || aggMax > 1<<30 {
		return usageError("bench rate", "--max %q: want a size from 1 to 1G", *maxFlag)
	}
	cfg := bench.RateConfig{Window: *window, Rounds: *rounds, Time: *dur, Max: int(aggMax)}
	if cfg.Sizes, err = sizeList(sizes, 16<<20); err != nil {
		return usageError("bench rate", "--sizes: %v", err)
	}
	switch {
	case *window < 1 || *window > 1<<16:
		return usageError("bench rate", "--window must be from 1 to 65536 (got %d)", *window)
	case *rounds < 1:
		return usageError("bench rate", "--rounds must be at least 1 (got %d)", *rounds)
	case *dur <= 0:
		return usageError("bench rate", "--time must be positive (got %v)", *dur)
	case *transport != "tcp" && *transport != "shm":
		return usageError("bench rate", "--transport %q: want tcp or shm", *transport)
	}
	for _, s := range cfg.Sizes {
		if int64(s)*int64(*window) > 1<<30 {
			return usageError("bench rate", "--window %d of %s messages: more than 1G in flight", *window, units.FormatSize(int64(s)))
		}
	}
	env := []string{commtune.EnvTransports + "=tcp"}
	if *transport == "shm" {
		env = []string{commtune.EnvTransports + "=shm,tcp"}
	}
	return twoRankBench("bench rate", *inJob, *asJSON, []string{"bench", "rate", "--in-job", "--sizes", *sizesFlag,
		"--window", strconv.Itoa(*window), "--rounds", strconv.Itoa(*rounds), "--time", dur.String(),
		"--max", *maxFlag, "--json=" + strconv.FormatBool(*asJSON)}, env,
		func(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (*bench.RateReport, error) {
			return bench.Rate(ctx, c, ep, cfg)
		}, writeRate)
}

// writeRate prints one line per size: messages per second under each mode
// and their ratio.
func writeRate(w io.Writer, rep *bench.RateReport) error {
	fmt.Fprintf(w, "# commtune message rate over %s, window %d (msgs/s, median of %d rounds; aggregate frames up to %s)\n",
		rep.Transport, rep.Window, rep.Rounds, units.FormatSize(int64(rep.Max)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tdefault\taggregate\taggregate/default\tmsgs per frame: default\taggregate\t")
	for _, r := range rep.Rows {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t\n", units.FormatSize(int64(r.Bytes)), r.DefaultMsgsPerSec, r.AggregateMsgsPerSec, r.Ratio,
			r.DefaultPerFrame, r.AggregatePerFrame)
	}
	return tw.Flush()
}
