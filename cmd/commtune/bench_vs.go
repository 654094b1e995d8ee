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
	roundsUsage = "with --vs: runs of each side, alternating; the table gives medians over them"
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

// vsPingPong alternates rounds of commtune's ping-pong and the MPI one.
func vsPingPong(ctx context.Context, cfg bench.PingPongConfig, transport, method, ref string, rounds int, asJSON bool) int {
	impl, bin, err := reference(ctx, ref)
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench pingpong: --vs %s: %v\n", ref, err)
		return 1
	}
	bar := newBar(os.Stderr, "rounds", 2*rounds)
	var ours, theirs [][]float64
	for k := 0; k < rounds; k++ {
		bar.Describe("commtune")
		rep, err := pingPongProcesses(ctx, cfg, transport, method)
		if err != nil {
			bar.Finish()
			fmt.Fprintf(os.Stderr, "commtune bench pingpong: %v\n", err)
			return 1
		}
		ours = append(ours, latencies(rep.Results))
		bar.Set(2*k + 1)
		bar.Describe(impl.Name)
		res, err := impl.PingPong(ctx, bin, cfg.Sizes, cfg.Iters)
		if err != nil {
			bar.Finish()
			fmt.Fprintf(os.Stderr, "commtune bench pingpong: %v\n", err)
			return 1
		}
		theirs = append(theirs, latencies(res))
		bar.Set(2*k + 2)
	}
	bar.Finish()
	if transport == "shm" && method != "auto" {
		transport += "/" + method
	}
	return writeVs(&bench.VsReport{Bench: "pingpong", Ranks: 2, Transport: transport, Ref: impl.Name,
		Rounds: rounds, Rows: bench.VsRows(cfg.Sizes, ours, theirs)}, asJSON)
}

func latencies(res []bench.Result) []float64 {
	out := make([]float64, len(res))
	for i, r := range res {
		out[i] = r.LatencyUS
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
	bar := newBar(os.Stderr, "rounds", 2*rounds)
	var ours, theirs [][]float64
	var sizes []int
	algo := cfg.Algorithms[0]
	for k := 0; k < rounds; k++ {
		bar.Describe("commtune")
		rep, err := collProcesses(ctx, cfg, n, transport, func(int, int, string) {})
		if err != nil {
			bar.Finish()
			fmt.Fprintf(os.Stderr, "commtune bench coll: %v\n", err)
			return 1
		}
		t := make([]float64, len(rep.Results))
		sizes = sizes[:0]
		for i, r := range rep.Results {
			t[i] = r.TimeUS
			sizes = append(sizes, r.Bytes)
			algo = r.Algo
		}
		ours = append(ours, t)
		bar.Set(2*k + 1)
		bar.Describe(impl.Name)
		res, err := impl.Coll(ctx, bin, n, op, cfg.Sizes, cfg.Iters, cfg.Timing)
		if err != nil {
			bar.Finish()
			fmt.Fprintf(os.Stderr, "commtune bench coll: %v\n", err)
			return 1
		}
		t = make([]float64, len(res))
		for i, r := range res {
			t[i] = r.TimeUS
		}
		theirs = append(theirs, t)
		bar.Set(2*k + 2)
	}
	bar.Finish()
	return writeVs(&bench.VsReport{Bench: "coll", Op: op, Algo: algo, Ranks: n, Transport: transport, Ref: impl.Name,
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
