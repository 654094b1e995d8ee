package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/mpiref"
)

// vsUsage is the help text of --vs and --rounds.
const (
	vsUsage     = "also run the same benchmark compiled against an installed MPI (mpi: the first of openmpi, mpich; or openmpi, mpich), alternating runs, and print both with ratios"
	roundsUsage = "with --vs: runs of each side, alternating; the table gives the mean over all their calls, and the medians of their p50 and p99"
	timingUsage = "back-to-back: per size untimed calls for 10 ms (20 at a time), one barrier, then the timed calls one after another, as an application makes them " +
		"(a slow call delays the next, and the mean shows it); barrier: a barrier before each timed call, so that each starts with all ranks " +
		"together (the call's own cost, the earlier default). Either way a call's time is the slowest rank's"
)

// reference finds and builds the MPI side of a --vs comparison.
func reference(ctx context.Context, name string) (mpiref.Impl, string, error) {
	impl, err := mpiref.Find(name)
	if err != nil {
		return impl, "", err
	}
	dir, err := mpiref.CacheDir()
	if err != nil {
		return impl, "", err
	}
	bin, err := impl.Build(ctx, dir)
	return impl, bin, err
}

// alternate runs ours and theirs (the reference, named ref) in turn for
// rounds, with a progress bar, and returns each side's summaries by round.
func alternate(rounds int, label, ref string, ours, theirs func() ([]bench.Summary, error)) (o, t [][]bench.Summary, err error) {
	bar := newBar(os.Stderr, label, 2*rounds)
	defer bar.Finish()
	for k := range rounds {
		bar.Describe("commtune")
		a, err := ours()
		if err != nil {
			return nil, nil, err
		}
		o = append(o, a)
		bar.Set(2*k + 1)
		bar.Describe(ref)
		b, err := theirs()
		if err != nil {
			return nil, nil, err
		}
		t = append(t, b)
		bar.Set(2*k + 2)
	}
	return o, t, nil
}

// vsPingPong alternates rounds of commtune's ping-pong and the MPI one.
func vsPingPong(ctx context.Context, cfg bench.PingPongConfig, transport, method, ref string, rounds int, asJSON bool) int {
	impl, bin, err := reference(ctx, ref)
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench pingpong: --vs %s: %v\n", ref, err)
		return 1
	}
	impl.TCP = transport == "tcp" // compare transport with transport
	ours, theirs, err := alternate(rounds, "rounds", impl.Name, func() ([]bench.Summary, error) {
		rep, err := pingPongProcesses(ctx, cfg, transport, method)
		if err != nil {
			return nil, err
		}
		return summaries(rep.Results, bench.Result.Summary), nil
	}, func() ([]bench.Summary, error) {
		res, err := impl.PingPong(ctx, bin, cfg.Sizes, cfg.Iters)
		return summaries(res, bench.Result.Summary), err
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench pingpong: %v\n", err)
		return 1
	}
	if transport == "shm" && method != "auto" {
		transport += "/" + method
	}
	return writeVs(&bench.VsReport{Bench: "pingpong", Ranks: 2, Transport: transport, Timing: bench.BackToBack, Ref: impl.Name,
		Rounds: rounds, Rows: bench.VsRows(cfg.Sizes, ours, theirs)}, asJSON)
}

// summaries returns each result's summary.
func summaries[R any](res []R, summary func(R) bench.Summary) []bench.Summary {
	out := make([]bench.Summary, len(res))
	for i, r := range res {
		out[i] = summary(r)
	}
	return out
}

// vsColl alternates rounds of commtune's collective benchmark and the MPI
// one, on n ranks each.
func vsColl(ctx context.Context, cfg bench.CollConfig, n int, transport, ref string, rounds int, asJSON bool) int {
	op := string(cfg.Op)
	if !slices.Contains(mpiref.Ops, op) {
		return usageError("bench", "--vs: the reference benchmark has no %s (it has %v)", op, mpiref.Ops)
	}
	if len(cfg.Algorithms) != 1 {
		return usageError("bench", "--vs compares one algorithm (auto, or one name), not %d", len(cfg.Algorithms))
	}
	impl, bin, err := reference(ctx, ref)
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench coll: --vs %s: %v\n", ref, err)
		return 1
	}
	impl.TCP = transport == "tcp"
	var sizes []int
	algo := cfg.Algorithms[0]
	ours, theirs, err := alternate(rounds, "rounds", impl.Name, func() ([]bench.Summary, error) {
		rep, err := collProcesses(ctx, cfg, n, 1, transport, func(int, int, string) {})
		if err != nil {
			return nil, err
		}
		sizes = sizes[:0]
		for _, r := range rep.Results {
			sizes = append(sizes, r.Bytes)
			algo = r.Algo
		}
		return summaries(rep.Results, bench.CollResult.Summary), nil
	}, func() ([]bench.Summary, error) {
		res, err := impl.Coll(ctx, bin, n, op, cfg.Sizes, cfg.Iters, cfg.Timing)
		return summaries(res, bench.CollResult.Summary), err
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench coll: %v\n", err)
		return 1
	}
	return writeVs(&bench.VsReport{Bench: "coll", Op: op, Algo: algo, Ranks: n, Transport: transport, Timing: cfg.Timing, Ref: impl.Name,
		Rounds: rounds, Rows: bench.VsRows(sizes, ours, theirs)}, asJSON)
}

func writeVs(r *bench.VsReport, asJSON bool) int {
	var err error
	if asJSON {
		err = json.NewEncoder(os.Stdout).Encode(r)
	} else {
		err = bench.WriteVsTable(os.Stdout, r)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench: %v\n", err)
		return 1
	}
	return 0
}
