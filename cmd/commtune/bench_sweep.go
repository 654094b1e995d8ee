package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/launch"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sample"
)

// sweepMain is `commtune bench sweep [--transports shm,tcp] [--runs N]
// [--json]`: the tuned configuration against fixed settings.
func sweepMain(args []string) int {
	fs := newFlagSet("bench sweep", "[--transports shm,tcp] [--runs 3] [--json]")
	transports := fs.String("transports", strings.Join(sampleTransports, ","), "transports to sweep, comma-separated")
	runs := fs.Int("runs", 3, "runs per transport; each size's time is the median of the runs' medians")
	asJSON := fs.Bool("json", false, "print one JSON object per transport instead of a table")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *runs < 1 {
		return usageError("bench", "--runs must be at least 1")
	}
	var ts []string
	for _, t := range strings.Split(*transports, ",") {
		if t = strings.TrimSpace(t); !slices.Contains(sampleTransports, t) {
			return usageError("bench", "--transports: %q is not one of %s", t, strings.Join(sampleTransports, ", "))
		}
		ts = append(ts, t)
	}
	// The sweep judges a profile: without one there is nothing to judge.
	fp, path, err := config.Platform()
	if err == nil && path == commtune.ProfileOff {
		err = fmt.Errorf("%s=off: the sweep compares the profile's thresholds with fixed ones", commtune.EnvProfile)
	}
	if err == nil {
		_, err = profile.Load(path, fp)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench sweep: %v\nrun `commtune sample` first\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// Quick sizes' repetitions, more blocks: a sweep compares settings at a
	// few sizes, and finer interleaving evens out drift between them.
	plan := sample.NewPlan(true)
	plan.Blocks = 9
	bar := newBar(os.Stderr, "sweeping", len(ts)**runs)
	for i, t := range ts {
		var results []*bench.SweepRun
		for r := 0; r < *runs; r++ {
			bar.Describe(fmt.Sprintf("%s run %d", t, r+1))
			res, err := sweepRun(ctx, t, plan)
			if err != nil {
				bar.Finish()
				fmt.Fprintf(os.Stderr, "commtune bench sweep: %s: %v\n", t, err)
				return 1
			}
			results = append(results, res)
			bar.Set(i**runs + r + 1)
		}
		sum, err := bench.Summarize(results)
		if err == nil {
			if *asJSON {
				err = json.NewEncoder(os.Stdout).Encode(sum)
			} else {
				if i > 0 {
					fmt.Println()
				}
				err = bench.WriteSweep(os.Stdout, sum)
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "commtune bench sweep: %v\n", err)
			return 1
		}
	}
	bar.Finish()
	return 0
}

// sweepRun runs one sweep job over transport and returns rank 0's result.
func sweepRun(ctx context.Context, transport string, plan sample.Plan) (*bench.SweepRun, error) {
	argv, err := launch.Self("bench-rank", "sweep", "--blocks", strconv.Itoa(plan.Blocks))
	if err != nil {
		return nil, err
	}
	env := []string{commtune.EnvTransports + "=tcp"}
	if transport == "shm" {
		env = []string{commtune.EnvTransports + "=shm,tcp"}
	}
	var out, stderr strings.Builder
	if err := launch.Run(ctx, launch.Options{N: 2, Args: argv, Env: env, Stdout: &out, Stderr: &stderr}); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, strings.TrimSpace(stderr.String()))
	}
	var res bench.SweepRun
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		return nil, fmt.Errorf("reading rank 0's result: %w", err)
	}
	return &res, nil
}

// sweepRankMain is one rank of a sweep (`commtune bench-rank sweep`).
func sweepRankMain(args []string) int {
	fs := newFlagSet("bench-rank sweep", "[--blocks N]")
	blocks := fs.Int("blocks", 0, "interleaved blocks per size")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	plan := sample.NewPlan(true)
	if *blocks > 0 {
		plan.Blocks = *blocks
	}
	return runRank(func(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (any, error) {
		res, err := bench.Sweep(ctx, c, ep, plan, nil)
		if res == nil {
			return nil, err // rank 1, or a failure
		}
		return res, err
	})
}
