package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/launch"
)

// haloGrids are seed 003's problem sizes, mesh points per process.
var haloGrids = []string{"32x32x32", "64x32x32", "64x64x32"}

// haloMain is `commtune bench halo [-n 8] [--grid 32x32x32] [--impl
// all|learn|brute|hypothesis|NAME,...] [--iters 500] [--runs 1] [--samples N]
// [--transport auto|tcp|shm|inproc] [--json]`.
func haloMain(args []string) int {
	fs := newFlagSet("bench halo", "[-n 8] [--grid "+strings.Join(haloGrids, "|")+"] [--impl all|learn|brute|hypothesis|NAME,...] [--iters 500] [--runs 1] [--samples 10] [--transport auto|tcp|shm|inproc] [--json]")
	ranks := fs.Int("n", 8, "ranks")
	gridFlag := fs.String("grid", haloGrids[0], "interior mesh points of each rank's block, XxYxZ (seed 003: "+strings.Join(haloGrids, ", ")+")")
	impl := fs.String("impl", "all", "all (every implementation, then every selector), learn, brute, hypothesis, or implementation names, comma-separated: "+strings.Join(commtune.HaloImpls(), ", "))
	iters := fs.Int("iters", 500, "solver iterations per run (seed 003: 500)")
	runs := fs.Int("runs", 1, "rounds of every run, interleaved; the table shows medians and each selector's choice per round")
	samples := fs.Int("samples", 0, "exchanges measuring each implementation during a selection (0: the library's default, 10)")
	transport := fs.String("transport", "auto", "auto (shared memory on this node), tcp, shm, or inproc (goroutine ranks in this process)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	grid, err := parseHaloGrid(*gridFlag)
	if err != nil {
		return usageError("bench", "--grid: %v", err)
	}
	switch {
	case *ranks < 1 || *ranks > 1024:
		return usageError("bench", "-n %d: want 1 to 1024 ranks", *ranks)
	case *iters < 1:
		return usageError("bench", "--iters must be at least 1 (got %d)", *iters)
	case *runs < 1:
		return usageError("bench", "--runs must be at least 1 (got %d)", *runs)
	case *samples < 0 || *samples > 1000:
		return usageError("bench", "--samples %d: want 0 to 1000", *samples)
	}
	names, err := haloRunNames(*impl)
	if err != nil {
		return usageError("bench", "--impl: %v", err)
	}
	cfg := bench.HaloConfig{Grid: grid, Iters: *iters, Runs: names, Repeats: *runs}
	// The benchmark's selections neither read nor write the decisions a
	// user's jobs keep: each run starts afresh.
	env := []string{commtune.EnvHaloState + "=" + commtune.HaloStateOff}
	if *samples > 0 {
		env = append(env, commtune.EnvHaloSamples+"="+strconv.Itoa(*samples))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	bar := newBar(os.Stderr, "measuring", len(names)**runs)
	progress := func(done, total int, what string) {
		bar.Describe(what)
		bar.Set(done)
	}
	rep := &bench.HaloReport{Bench: "halo", Ranks: *ranks, Grid: grid, Iters: *iters, Transport: *transport}
	rep.Dims = []int{0, 0, 0}
	if err := commtune.DimsCreate(*ranks, rep.Dims); err != nil {
		return usageError("bench", "-n %d: %v", *ranks, err)
	}
	switch *transport {
	case "inproc":
		cfg.Progress = progress
		opts := []commtune.Option{func(c *commtune.Config) { c.HaloState = commtune.HaloStateOff; c.HaloSamples = *samples }}
		err = commtune.Local(*ranks, func(c *commtune.Comm) error {
			res, err := bench.Halo(ctx, c, cfg)
			if c.Rank() == 0 && err == nil {
				rep.Runs = res
			}
			return err
		}, opts...)
	case "auto", "tcp", "shm":
		var argv []string
		argv, err = launch.Self("bench-rank", "halo", "--grid", *gridFlag, "--runs-list", strings.Join(names, ","),
			"--iters", strconv.Itoa(*iters), "--repeats", strconv.Itoa(*runs))
		if err == nil {
			var got bench.HaloReport
			err = benchProcesses(ctx, argv, *ranks, 1, *transport, env, progress, &got)
			rep.Runs = got.Runs
		}
	default:
		return usageError("bench", "--transport %q: want auto, tcp, shm or inproc", *transport)
	}
	bar.Finish()
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench halo: %v\n", err)
		return 1
	}
	if *asJSON {
		err = json.NewEncoder(os.Stdout).Encode(rep)
	} else {
		if ncpu := runtime.NumCPU(); *ranks > ncpu && *transport != "inproc" {
			fmt.Printf("note: %d ranks on %d processors: oversubscribed, times include waiting for a processor\n", *ranks, ncpu)
		}
		err = rep.WriteText(os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench halo: %v\n", err)
		return 1
	}
	return 0
}

// haloRunNames expands --impl.
func haloRunNames(s string) ([]string, error) {
	impls := commtune.HaloImpls()
	switch s {
	case "all":
		return append(impls, commtune.HaloSelectors()...), nil
	}
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(impls, n) && !slices.Contains(commtune.HaloSelectors(), n) {
			return nil, fmt.Errorf("%q is neither an implementation (%s) nor a selector (%s)", n, strings.Join(impls, ", "),
				strings.Join(commtune.HaloSelectors(), ", "))
		}
		out = append(out, n)
	}
	return out, nil
}

// parseHaloGrid reads "XxYxZ".
func parseHaloGrid(s string) ([3]int, error) {
	var g [3]int
	parts := strings.Split(s, "x")
	if len(parts) != 3 {
		return g, fmt.Errorf("%q: want three extents like 32x32x32", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 4096 {
			return g, fmt.Errorf("%q: extent %q is not a whole number from 1 to 4096", s, p)
		}
		g[i] = n
	}
	return g, nil
}

// haloRankMain is the hidden `commtune bench-rank halo ...`: one rank of
// the halo benchmark.
func haloRankMain(args []string) int {
	fs := newFlagSet("bench-rank halo", "--grid XxYxZ --runs-list A,B --iters N --repeats R")
	gridFlag := fs.String("grid", haloGrids[0], "mesh points per rank")
	list := fs.String("runs-list", "", "implementations and selectors")
	iters := fs.Int("iters", 500, "iterations")
	repeats := fs.Int("repeats", 1, "rounds")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	grid, err := parseHaloGrid(*gridFlag)
	if err != nil {
		return usageError("bench-rank", "--grid: %v", err)
	}
	names, err := haloRunNames(*list)
	if err != nil {
		return usageError("bench-rank", "--runs-list: %v", err)
	}
	cfg := bench.HaloConfig{Grid: grid, Iters: *iters, Runs: names, Repeats: *repeats, Progress: rankProgress()}
	return runRank(func(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (any, error) {
		res, err := bench.Halo(ctx, c, cfg)
		if c.Rank() != 0 || err != nil {
			return nil, err
		}
		return &bench.HaloReport{Bench: "halo", Runs: res}, nil
	})
}
