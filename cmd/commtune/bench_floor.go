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
)

const floorUsage = "[--calls 20000] [--json] [--in-job [--out FILE]]"

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
	out := fs.String("out", "", "with --in-job: where rank 0 writes its report as JSON, rather than print it (the command's own job)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *calls < 1 || *calls > 10_000_000 {
		return usageError("bench floor", "--calls must be from 1 to 10000000 (got %d)", *calls)
	}
	cfg := bench.FloorConfig{Calls: *calls}
	if *inJob {
		// Ranks bind to a processor each: the goroutine pair is measured
		// by the command that started them (unbound), unless another
		// launcher did.
		return runRank(func(ctx context.Context, c *commtune.Comm, _ control.Endpoint) (any, error) {
			rep, err := bench.Floor(ctx, c, cfg)
			if err != nil || rep == nil {
				return nil, err
			}
			if *out != "" {
				b, err := json.Marshal(rep)
				if err != nil {
					return nil, err
				}
				return nil, os.WriteFile(*out, b, 0o600)
			}
			rep.GoroutinePingPong, rep.GoroutineAllreduce = bench.FloorGoroutines(*calls)
			return nil, printFloor(rep, *asJSON)
		})
	}
	dir, err := os.MkdirTemp("", "commtune-floor-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench floor: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "report.json")
	selfArgs := []string{"bench", "floor", "--in-job", "--calls", strconv.Itoa(*calls), "--out", path}
	if err := launchTwo(selfArgs, []string{commtune.EnvTransports + "=shm,tcp"}); err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench floor: %v\n", err)
		return 1
	}
	var rep bench.FloorReport
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench floor: the ranks' report: %v\n", err)
		return 1
	}
	rep.GoroutinePingPong, rep.GoroutineAllreduce = bench.FloorGoroutines(*calls)
	if err := printFloor(&rep, *asJSON); err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench floor: %v\n", err)
		return 1
	}
	return 0
}

// printFloor prints rep as JSON or as a table.
func printFloor(rep *bench.FloorReport, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(rep)
	}
	return writeFloor(os.Stdout, rep)
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
