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
)

const floorUsage = "[--calls 20000] [--json] [--in-job]"

// floorMain is `commtune bench floor`: what moving a word through shared
// memory costs on this machine with no library in the way (one line
// written by one side and spun on by the other), between two processes
// and between two goroutines: the floor that `bench pingpong` and `bench
// coll` are measured against.
func floorMain(args []string) int {
	fs := newFlagSet("bench floor", floorUsage)
	calls := fs.Int("calls", 20000, "timed iterations per pattern, back to back after as many untimed")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	inJob := fs.Bool("in-job", false, "be one of the two ranks of a job another launcher started, on one node; otherwise start two ranks here")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *calls < 1 || *calls > 10_000_000 {
		return usageError("bench floor", "--calls must be from 1 to 10000000 (got %d)", *calls)
	}
	cfg := bench.FloorConfig{Calls: *calls}
	return twoRankBench("bench floor", *inJob, *asJSON, []string{"bench", "floor", "--in-job",
		"--calls", strconv.Itoa(*calls), "--json=" + strconv.FormatBool(*asJSON)},
		[]string{commtune.EnvTransports + "=shm,tcp"},
		func(ctx context.Context, c *commtune.Comm, _ control.Endpoint) (*bench.FloorReport, error) {
			return bench.Floor(ctx, c, cfg)
		}, writeFloor)
}

// writeFloor prints a line per pattern and pair.
func writeFloor(w io.Writer, rep *bench.FloorReport) error {
	fmt.Fprintf(w, "# commtune bench floor: one 64-byte line written by one side and spun on by the other, %d calls back to back; times (us): mean, p50, p99 (ping-pong: one way; allreduce 8 B: the slower side per call)\n", rep.Calls)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pattern\tbetween\tmean\tp50\tp99\t")
	for _, r := range []struct {
		pattern, between string
		s                bench.FloorTimes
	}{
		{"ping-pong", "processes", rep.ProcessPingPong},
		{"allreduce", "processes", rep.ProcessAllreduce},
		{"ping-pong", "goroutines", rep.GoroutinePingPong},
		{"allreduce", "goroutines", rep.GoroutineAllreduce},
	} {
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%.3f\t\n", r.pattern, r.between, r.s.Mean, r.s.P50, r.s.P99)
	}
	return tw.Flush()
}
