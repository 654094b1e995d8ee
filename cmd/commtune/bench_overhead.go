package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/launch"
)

const overheadUsage = "[-n 2] [--transport shm|tcp] [--calls 20000] [--rounds 20] [--size 8] [--json]"

// overheadMain is `commtune bench overhead`: what the counters and the
// timeline cost a small collective, against calls that record nothing,
// with the modes taking turns in one job.
func overheadMain(args []string) int {
	fs := newFlagSet("bench overhead", overheadUsage)
	n := fs.Int("n", 2, "ranks")
	transport := fs.String("transport", "shm", "shm (processes through shared memory) or tcp (processes over TCP)")
	calls := fs.Int("calls", 20000, "timed Allreduces per mode, back to back")
	rounds := fs.Int("rounds", 20, "rounds: each mode runs calls/rounds Allreduces per round, the modes taking turns")
	size := fs.Int("size", 8, "bytes each Allreduce reduces (a multiple of 8)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	switch {
	case *n < 2 || *n > 64:
		return usageError("bench overhead", "-n %d: want 2 to 64 ranks", *n)
	case *transport != "shm" && *transport != "tcp":
		return usageError("bench overhead", "--transport %q: want shm or tcp", *transport)
	case *rounds < 1 || *calls < *rounds || *calls > 10_000_000:
		return usageError("bench overhead", "--calls %d --rounds %d: want 1 ≤ rounds ≤ calls ≤ 10000000", *calls, *rounds)
	case *size < 8 || *size%8 != 0 || *size > 1<<20:
		return usageError("bench overhead", "--size %d: want a multiple of 8 from 8 to 1M", *size)
	}
	dir, err := os.MkdirTemp("", "commtune-overhead-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench overhead: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	report := filepath.Join(dir, "report.json")
	argv, err := launch.Self("bench-rank", "overhead", "--calls", strconv.Itoa(*calls), "--rounds", strconv.Itoa(*rounds),
		"--size", strconv.Itoa(*size), "--out", report)
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench overhead: %v\n", err)
		return 1
	}
	env := []string{commtune.EnvTransports + "=tcp", commtune.EnvTrace + "=" + filepath.Join(dir, "trace")}
	if *transport == "shm" {
		env[0] = commtune.EnvTransports + "=shm,tcp"
	}
	if err := launch.Run(context.Background(), launch.Options{N: *n, Args: argv, Env: env}); err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench overhead: %v\n", err)
		return 1
	}
	var rep bench.OverheadReport
	b, err := os.ReadFile(report)
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench overhead: the ranks' report: %v\n", err)
		return 1
	}
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(rep)
		return 0
	}
	printOverhead(os.Stdout, &rep)
	return 0
}

// printOverhead writes the report as a table.
func printOverhead(w io.Writer, rep *bench.OverheadReport) {
	fmt.Fprintf(w, "%d-byte Allreduce back to back, %d ranks over %s, %d calls per mode in %d rounds (the modes take turns)\n",
		rep.Size, rep.Ranks, rep.Transport, rep.Calls, rep.Rounds)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tmean\tp50\tp99\tvs off (median of rounds)\trounds' range\t")
	for _, m := range rep.Modes {
		fmt.Fprintf(tw, "%s\t%.0f ns\t%.0f ns\t%.0f ns\t%.3f×\t%.3f–%.3f\t\n", m.Mode, m.Mean, m.P50, m.P99, m.Ratio, m.RatioLo, m.RatioHi)
	}
	tw.Flush()
}

// overheadRankMain is the hidden `commtune bench-rank overhead ...`: one
// rank of it; rank 0 writes the report to --out.
func overheadRankMain(args []string) int {
	fs := newFlagSet("bench-rank overhead", "--calls N --rounds N --size B --out FILE")
	calls := fs.Int("calls", 20000, "calls per mode")
	rounds := fs.Int("rounds", 20, "rounds")
	size := fs.Int("size", 8, "bytes")
	out := fs.String("out", "", "where rank 0 writes its report")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	cfg := bench.OverheadConfig{Calls: *calls, Rounds: *rounds, Size: *size, Trace: os.Getenv(commtune.EnvTrace) != ""}
	return runRank(func(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (any, error) {
		rep, err := bench.Overhead(ctx, c, ep.Observe, cfg)
		if err != nil || rep == nil {
			return nil, err
		}
		b, err := json.Marshal(rep)
		if err != nil {
			return nil, err
		}
		return nil, os.WriteFile(*out, b, 0o600)
	})
}
