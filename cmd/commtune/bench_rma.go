package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/launch"
	"github.com/commtune/commtune/internal/units"
)

// rmaMain is `commtune bench rma`: the one-sided patterns of bench.RMA on
// two processes, alone or against an installed MPI's windows.
func rmaMain(args []string) int {
	fs := newFlagSet("bench rma", "[--pattern "+strings.Join(bench.RMAPatterns, ",")+"] [--sizes 8,64K,1M,4M] [--iters 2000] [--window alloc|new] [--transport shm|tcp] [--vs mpi [--rounds 3]] [--json]")
	patterns := fs.String("pattern", strings.Join(bench.RMAPatterns, ","), "patterns, comma-separated: put-lat, get-lat (one Put or Get and a Flush), put-bw, get-bw ("+strconv.Itoa(bench.RMABurst)+" of them and a Flush), fop-lock (exclusive Lock, FetchAndOp, Unlock), fop-lockall (FetchAndOp and Flush under LockAll)")
	sizesFlag := fs.String("sizes", "8,64K,1M,4M", "bytes per operation, comma-separated (the fop patterns move one int64 whatever the size)")
	iters := fs.Int("iters", 2000, "timed iterations for small sizes; large sizes use fewer (at least 20)")
	window := fs.String("window", "alloc", "alloc (AllocWindow; MPI_Win_allocate) or new (NewWindow over the program's memory; MPI_Win_create)")
	transport := fs.String("transport", "shm", "shm (one node: in place for alloc windows, through the target's agent for new ones) or tcp")
	asJSON := fs.Bool("json", false, "print JSON objects instead of tables")
	vs := fs.String("vs", "", vsUsage)
	rounds := fs.Int("rounds", 3, roundsUsage)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	sizes, err := units.ParseSizes(*sizesFlag)
	if err != nil {
		return usageError("bench", "--sizes: %v", err)
	}
	if *transport != "shm" && *transport != "tcp" {
		return usageError("bench", "--transport %q: want shm or tcp", *transport)
	}
	if *rounds < 1 {
		return usageError("bench", "--rounds must be at least 1 (got %d)", *rounds)
	}
	ctx := context.Background()
	for _, p := range strings.Split(*patterns, ",") {
		cfg := bench.RMAConfig{Pattern: p, Iters: *iters, Window: *window}
		for _, s := range sizes {
			cfg.Sizes = append(cfg.Sizes, int(s))
		}
		if err := bench.CheckRMAConfig(cfg); err != nil {
			return usageError("bench", "%v", err)
		}
		if code := rmaPattern(ctx, cfg, *transport, *vs, *rounds, *asJSON); code != 0 {
			return code
		}
	}
	return 0
}

func writeJSON(v any) int {
	if err := json.NewEncoder(os.Stdout).Encode(v); err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench rma: %v\n", err)
		return 1
	}
	return 0
}

// rmaPattern runs one pattern: commtune alone, or alternating with the
// reference for rounds.
func rmaPattern(ctx context.Context, cfg bench.RMAConfig, transport, vs string, rounds int, asJSON bool) int {
	if vs == "" {
		rep, err := rmaProcesses(ctx, cfg, transport)
		if err != nil {
			fmt.Fprintf(os.Stderr, "commtune bench rma: %v\n", err)
			return 1
		}
		if asJSON {
			return writeJSON(rep)
		}
		fmt.Printf("# commtune %s, %s window, 2 ranks, transport %s; times (us) per iteration, back to back\n", cfg.Pattern, cfg.Window, transport)
		fmt.Printf("%8s %10s %10s %10s %12s\n", "size", "mean", "p50", "p99", "MB/s (mean)")
		for _, r := range rep.Results {
			moved := r.Bytes
			if cfg.Pattern == bench.RMAPutBW || cfg.Pattern == bench.RMAGetBW {
				moved *= bench.RMABurst
			}
			fmt.Printf("%8s %10.3f %10.3f %10.3f %12.1f\n", units.FormatSize(int64(r.Bytes)), r.MeanUS, r.TimeUS, r.P99US, float64(moved)/r.MeanUS)
		}
		return 0
	}
	impl, bin, err := reference(ctx, vs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench rma: --vs %s: %v\n", vs, err)
		return 1
	}
	impl.TCP = transport == "tcp"
	ours, theirs, err := alternate(rounds, "rounds "+cfg.Pattern, impl.Name, func() ([]bench.Summary, error) {
		rep, err := rmaProcesses(ctx, cfg, transport)
		if err != nil {
			return nil, err
		}
		return summaries(rep.Results, bench.CollResult.Summary), nil
	}, func() ([]bench.Summary, error) {
		res, err := impl.RMA(ctx, bin, cfg.Pattern, cfg.Sizes, cfg.Iters, cfg.Window)
		return summaries(res, bench.CollResult.Summary), err
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench rma: %v\n", err)
		return 1
	}
	return writeVs(&bench.VsReport{Bench: "rma", Op: cfg.Pattern, Algo: cfg.Window + " window", Ranks: 2, Transport: transport, Timing: bench.BackToBack,
		Ref: impl.Name, Rounds: rounds, Rows: bench.VsRows(cfg.Sizes, ours, theirs)}, asJSON)
}

// rmaProcesses runs the pattern on two ranks of this executable.
func rmaProcesses(ctx context.Context, cfg bench.RMAConfig, transport string) (*bench.RMAReport, error) {
	argv, err := launch.Self("bench-rank", "rma", "--pattern", cfg.Pattern, "--sizes", joinSizes(cfg.Sizes),
		"--iters", strconv.Itoa(cfg.Iters), "--window", cfg.Window, "--transport", transport)
	if err != nil {
		return nil, err
	}
	var rep bench.RMAReport
	if err := benchProcesses(ctx, argv, 2, 1, transport, nil, func(int, int, string) {}, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

// rmaRankMain is the hidden `commtune bench-rank rma ...`.
func rmaRankMain(args []string) int {
	fs := newFlagSet("bench-rank rma", "--pattern P --sizes ... --iters N --window W")
	pattern := fs.String("pattern", bench.RMAPutLatency, "pattern")
	sizesFlag := fs.String("sizes", "8", "sizes")
	iters := fs.Int("iters", 2000, "iterations")
	window := fs.String("window", "alloc", "alloc or new")
	transport := fs.String("transport", "shm", "transport in use (for the report)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	sizes, err := units.ParseSizes(*sizesFlag)
	if err != nil {
		return usageError("bench-rank", "--sizes: %v", err)
	}
	cfg := bench.RMAConfig{Pattern: *pattern, Iters: *iters, Window: *window}
	for _, s := range sizes {
		cfg.Sizes = append(cfg.Sizes, int(s))
	}
	return runRank(func(ctx context.Context, c *commtune.Comm, _ control.Endpoint) (any, error) {
		res, err := bench.RMA(ctx, c, cfg)
		if c.Rank() != 0 || err != nil {
			return nil, err
		}
		return &bench.RMAReport{Bench: "rma", Pattern: cfg.Pattern, Window: cfg.Window, Transport: *transport, Results: res}, nil
	})
}
