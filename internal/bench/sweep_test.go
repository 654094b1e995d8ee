package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/profile"
)

// TestSummarize: settings taking the tuned path at a size are pooled with
// it; the best and worst are over the other paths.
func TestSummarize(t *testing.T) {
	tuned := core.Policy{Rendezvous: 8 << 10, Iovec: 1}
	pol := map[string]core.Policy{
		Tuned:            tuned,
		"rendezvous=4K":  {Rendezvous: 4 << 10, Iovec: 1},
		"rendezvous=64K": {Rendezvous: 64 << 10, Iovec: 1},
	}
	names := []string{Tuned, "rendezvous=4K", "rendezvous=64K"}
	curve := func(ns ...float64) profile.Curve {
		c := profile.Curve{}
		for i, v := range ns {
			c = append(c, profile.Sample{Size: []int64{2 << 10, 6 << 10, 32 << 10}[i], Median: v, P25: v, P75: v, Reps: 1})
		}
		return c
	}
	run := func(t2, t4, t64 profile.Curve) *SweepRun {
		return &SweepRun{Transport: "tcp", Settings: names, Policies: pol,
			Curves: map[string]profile.Curve{Tuned: t2, "rendezvous=4K": t4, "rendezvous=64K": t64}}
	}
	// At 2K all three send eagerly: one path, pooled. At 6K 4K is the odd
	// one out (rendezvous); at 32K 64K is (eager).
	runs := []*SweepRun{
		run(curve(100, 200, 900), curve(110, 400, 1000), curve(90, 210, 800)),
		run(curve(101, 190, 910), curve(111, 410, 990), curve(91, 220, 820)),
		run(curve(99, 205, 905), curve(109, 390, 1010), curve(89, 215, 810)),
	}
	s, err := Summarize(runs)
	if err != nil {
		t.Fatal(err)
	}
	want := []SweepRow{
		{Size: 2 << 10, Path: "eager-iovec", TunedNS: 100, Best: "rendezvous=4K", BestPath: "eager-iovec", BestNS: 100,
			Worst: "rendezvous=4K", WorstPath: "eager-iovec", WorstNS: 100, TunedOverBest: 1, WorstOverBest: 1},
		{Size: 6 << 10, Path: "eager-iovec", TunedNS: 207.5, Best: "rendezvous=64K", BestPath: "eager-iovec", BestNS: 207.5,
			Worst: "rendezvous=4K", WorstPath: "rendezvous", WorstNS: 400, TunedOverBest: 1, WorstOverBest: 400 / 207.5},
		// tuned and 4K both rendezvous: six values pooled, median (910+990)/2.
		{Size: 32 << 10, Path: "rendezvous", TunedNS: 950, Best: "rendezvous=64K", BestPath: "eager-iovec", BestNS: 810,
			Worst: "rendezvous=4K", WorstPath: "rendezvous", WorstNS: 950, TunedOverBest: 950.0 / 810, WorstOverBest: 950.0 / 810},
	}
	if !slices.Equal(s.Rows, want) {
		t.Fatalf("rows\n%+v\nwant\n%+v", s.Rows, want)
	}
	var b strings.Builder
	if err := WriteSweep(&b, s); err != nil || !strings.Contains(b.String(), "tuned is at most 17.3% slower") {
		t.Fatalf("table:\n%s\n%v", b.String(), err)
	}
}

func TestSweepSizes(t *testing.T) {
	got := sweepSizes(core.Policy{Rendezvous: 16 << 10, Iovec: 1024})
	for _, want := range []int64{256, 512, 1024, 2048, 4096, 16<<10 + 1, 64<<10 + 4, 96 << 10} {
		if !slices.Contains(got, want) {
			t.Errorf("sizes %v lack %d", got, want)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("sizes %v not sorted", got)
	}
}
