package sample

import (
	"testing"

	"github.com/commtune/commtune/internal/coll"
)

// cands makes candidates of allreduce's first algorithms with the given
// blocks (ns, by round; 0: did not run).
func cands(blocks ...[]float64) []*candidate {
	algos := coll.Algorithms(coll.OpAllreduce)
	out := make([]*candidate, len(blocks))
	for i, b := range blocks {
		out[i] = &candidate{algo: algos[i], blocks: b}
	}
	return out
}

// TestTableRounds: the rounds judge algorithms on blocks of the same
// round, so a drift that moves every algorithm alike changes nothing; an
// algorithm slower in most rounds is dropped, one slower in some is kept;
// the point ranks the leader first.
func TestTableRounds(t *testing.T) {
	// Rounds 1–6 drift by up to 3x; B is 10 % slower than A in each.
	drift := []float64{100, 300, 120, 250, 90, 200}
	scaled := func(f float64, first float64) []float64 {
		b := []float64{first}
		for _, d := range drift {
			b = append(b, d*f)
		}
		return b
	}
	// Round by round against A: slower in 2 of 6, level in 2.
	mixed := []float64{100}
	for i, f := range []float64{1.1, 0.9, 1, 1.05, 0.95, 1} {
		mixed = append(mixed, drift[i]*f)
	}
	for _, tc := range []struct {
		name     string
		cs       []*candidate
		lead     int
		dropped  []bool
		rankedBy []int // the point's order, by index in cs
	}{
		{"drift moves all alike", cands(scaled(1, 100), scaled(1.1, 100)), 0, []bool{false, true}, []int{0, 1}},
		{"slower first block, faster rounds", cands(scaled(1.1, 90), scaled(1, 120)), 1, []bool{true, false}, []int{1, 0}},
		{"within noise is kept", cands(scaled(1, 100), mixed), 0, []bool{false, false}, []int{0, 1}},
		{"screened out ranks by its block", cands(scaled(1, 100), append([]float64{400}, make([]float64, 6)...)), 0, []bool{false, false}, []int{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "screened out ranks by its block" {
				tc.cs[1].out = true
				tc.dropped[1] = true
			}
			if got := leader(tc.cs); got != tc.cs[tc.lead] {
				t.Errorf("leader is %s, want %s", got.algo.Name(), tc.cs[tc.lead].algo.Name())
			}
			dropSlower(tc.cs)
			for i, cd := range tc.cs {
				if cd.out != tc.dropped[i] {
					t.Errorf("%s: out = %t, want %t", cd.algo.Name(), cd.out, tc.dropped[i])
				}
			}
			p := rankPoint(1024, tc.cs)
			if len(p.Ranked) != len(tc.rankedBy) {
				t.Fatalf("%d ranked, want %d", len(p.Ranked), len(tc.rankedBy))
			}
			for i, k := range tc.rankedBy {
				if p.Ranked[i].Algo != tc.cs[k].algo.Name() {
					t.Errorf("ranked %d is %s, want %s", i, p.Ranked[i].Algo, tc.cs[k].algo.Name())
				}
				if i > 0 && p.Ranked[i].MeanUS < p.Ranked[i-1].MeanUS {
					t.Errorf("ranked %d faster than the one before: %v", i, p.Ranked)
				}
			}
		})
	}
}

// TestTableRoundsScale: the leader's figure is the median of its own
// blocks, and a rival 10 % slower round by round shows 10 % slower.
func TestTableRoundsScale(t *testing.T) {
	cs := cands([]float64{1000, 1000, 3000, 2000}, []float64{1100, 1100, 3300, 2200})
	p := rankPoint(64, cs)
	if got := p.Ranked[0].MeanUS; got != 1.5 {
		t.Errorf("leader at %v µs, want the median of its blocks, 1.5", got)
	}
	if m := p.Margin(); m < 0.099 || m > 0.101 {
		t.Errorf("margin %v, want 0.1", m)
	}
}
