package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/units"
)

// The demo's run of the online selection: calls through it from a cold
// start, and of each algorithm forced.
const (
	demoLearnCalls  = 2000
	demoForcedCalls = 300
	// demoLearnSlack is how far above the best forced algorithm the
	// selection, exploration included, counts as having found it: the
	// noise of two series of a few hundred calls here.
	demoLearnSlack = 1.15
)

// demoLearnedRow is one operation and size of the demo's learning run.
type demoLearnedRow struct {
	op            coll.Operation
	bytes         int
	learnUS       float64 // elapsed per call, exploration included, slowest rank
	leader        string  // what the selection led with at the end
	bestAlgo      string  // the fastest algorithm forced
	bestUS, ratio float64
	near          bool // ratio within demoLearnSlack
}

// demoLearned runs what a program gets with no setting, the collectives'
// selection learning in the running program, against every algorithm of
// Bcast and Allreduce forced, on ranks ranks tuned by the profile at
// profilePath, and prints how close it came to the best. It changes
// nothing of the verdict: the point is to show it.
func demoLearned(ctx context.Context, w, status io.Writer, ranks int, profilePath string, sizes []int64) error {
	fmt.Fprintf(w, "\nLearning in the running program (the default, %s=learn): %d calls of each from a cold start, back to back,\n"+
		"against each algorithm forced (%d calls each); time = elapsed per call, slowest rank, exploration included...\n",
		commtune.EnvCollSelect, demoLearnCalls, demoForcedCalls)
	env := []string{commtune.EnvProfile + "=" + profilePath}
	var rows []demoLearnedRow
	for _, op := range []coll.Operation{coll.OpBcast, coll.OpAllreduce} {
		cfg := bench.LotteryConfig{Op: op, Calls: demoLearnCalls, ForcedCalls: demoForcedCalls, Timing: bench.BackToBack,
			Forced: allAlgorithms(op, "auto", 1), Applies: segmentApplies}
		for _, n := range sizes {
			cfg.Sizes = append(cfg.Sizes, int(n))
		}
		rep, err := runLotteryBench(ctx, cfg, bench.Learn, ranks, "auto", env, func(done, total int, what string) {})
		if err != nil {
			return fmt.Errorf("learning %s: %w", op, err)
		}
		fmt.Fprintf(status, "  learning %s done\n", op)
		for _, run := range rep.Runs {
			if len(run.Fixed) == 0 || run.WallUS <= 0 {
				continue
			}
			best := run.Fixed[0]
			for _, f := range run.Fixed {
				if f.WallUS < best.WallUS {
					best = f
				}
			}
			leader := run.Leader
			if leader == "" && len(run.Calls) > 0 {
				// A path the selection takes without draws (the node
				// segment): what the last call ran.
				leader = run.Calls[len(run.Calls)-1].Algo + " (no draws)"
			}
			r := demoLearnedRow{op: op, bytes: run.Bytes, learnUS: run.WallUS, leader: leader, bestAlgo: best.Algo,
				bestUS: best.WallUS, ratio: run.WallUS / best.WallUS}
			r.near = r.ratio <= demoLearnSlack
			rows = append(rows, r)
		}
	}
	return writeDemoLearned(w, rows)
}

// writeDemoLearned prints the learning run's table and its summary.
func writeDemoLearned(w io.Writer, rows []demoLearnedRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "operation\tsize\tlearning µs/call\tled at the end by\tbest forced\tµs/call\tlearning/best\t\n")
	within := 0
	for _, r := range rows {
		if r.near {
			within++
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%s\t%.2f\t%.2f\t\n", r.op, units.FormatSize(int64(r.bytes)), r.learnUS,
			strings.TrimPrefix(r.leader, string(r.op)+"/"), strings.TrimPrefix(r.bestAlgo, string(r.op)+"/"), r.bestUS, r.ratio)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "Learning, exploration included, came within %.2fx of the best algorithm forced at %d of %d. This run keeps\n"+
		"nothing; a program's second run starts where its first ended (the state file). `commtune bench coll --algo learn`\n"+
		"measures any operation this way.\n", demoLearnSlack, within, len(rows))
	return err
}
