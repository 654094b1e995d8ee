package profile

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestRefine(t *testing.T) {
	line := func(a, b float64) func(float64) float64 { return func(x float64) float64 { return a + b*x } }
	eager := append(pow2(1, 8192), 9800, 10400, 16384, 32768, 65536, 131072, 262144, 524288)
	// base has nothing to refine: the eager variants are within 5% of
	// each other (as good as each other), eager wins up to the eager
	// limit, and one large method.
	base := func() *Transport {
		return &Transport{MaxEager: 512 << 10, Methods: map[string]Curve{
			EagerCopy:             curve(eager, line(1000, 0.1)),
			EagerIovec:            curve(eager, line(1010, 0.1)),
			RendezvousVia("copy"): curve(pow2(1, 16<<20), line(5000, 0.2)),
		}}
	}
	large := pow2(1, 16<<20)
	copyLarge := curve(large, line(5000, 0.2))
	// by scales copyLarge by f(x): another large method.
	by := func(f func(x float64) float64) Curve {
		c := curve(large, func(x float64) float64 { return (5000 + 0.2*x) * f(x) })
		return c
	}
	mid := func(x0, x1 float64) int64 { return int64(math.Round(math.Sqrt(x0 * x1))) }
	tests := []struct {
		name    string
		edit    func(t *Transport)
		maxReps int
		want    []Probe
	}{
		{"nothing to refine", func(*Transport) {}, 100, nil},
		{
			// eager-copy (1000 + x/10) and eager-iovec (1500 + x/20)
			// cross at 10000, between the samples at 9800 and 10400 —
			// closer than MinStep: as good as it gets.
			name: "a threshold between close samples",
			edit: func(t *Transport) { t.Methods[EagerIovec] = curve(eager, line(1500, 0.05)) },
			want: nil, maxReps: 100,
		},
		{
			// The same crossing on a coarse grid (8K, 16K): their midpoint.
			name: "a threshold between distant samples",
			edit: func(t *Transport) {
				coarse := pow2(1, 512<<10)
				t.Methods[EagerCopy] = curve(coarse, line(1000, 0.1))
				t.Methods[EagerIovec] = curve(coarse, line(1500, 0.05))
			},
			maxReps: 100,
			want:    []Probe{{mid(8192, 16384), []string{EagerCopy, EagerIovec}}},
		},
		{
			// The same, with room for more round trips: the two samples
			// that place the crossing are sampled again too.
			name: "the samples on either side of a threshold, again",
			edit: func(t *Transport) {
				coarse := pow2(1, 512<<10)
				t.Methods[EagerCopy] = curve(coarse, line(1000, 0.1))
				t.Methods[EagerIovec] = curve(coarse, line(1500, 0.05))
			},
			maxReps: 200,
			want: []Probe{
				{mid(8192, 16384), []string{EagerCopy, EagerIovec}},
				{8192, []string{EagerCopy, EagerIovec}},
				{16384, []string{EagerCopy, EagerIovec}},
			},
		},
		{
			// cachefree faster from 2M to 8M, slower again at 16M: two
			// crossings, each sampled around.
			name: "curves that cross twice",
			edit: func(t *Transport) {
				t.Methods[RendezvousVia("cachefree")] = by(func(x float64) float64 {
					if x >= 2<<20 && x <= 8<<20 {
						return 0.8
					}
					return 1.3
				})
			},
			maxReps: 100,
			want: []Probe{
				{mid(1<<20, 2<<20), []string{RendezvousVia("copy"), RendezvousVia("cachefree")}},
				{mid(8<<20, 16<<20), []string{RendezvousVia("cachefree"), RendezvousVia("copy")}},
			},
		},
		{
			// cachefree 20% slower from 1M, but its points and copy's
			// spread ±60% over 9 round trips: within their noise. Each
			// size above the eager limit is sampled again...
			name: "a gap within noise",
			edit: func(t *Transport) {
				t.Methods[RendezvousVia("copy")] = spreadFrom(copyLarge, 1<<20, 0.6, 9)
				t.Methods[RendezvousVia("cachefree")] = spreadFrom(by(func(float64) float64 { return 1.2 }), 1<<20, 0.6, 9)
			},
			maxReps: 40,
			want: []Probe{
				{1 << 20, []string{RendezvousVia("copy"), RendezvousVia("cachefree")}},
				{2 << 20, []string{RendezvousVia("copy"), RendezvousVia("cachefree")}},
				{4 << 20, []string{RendezvousVia("copy"), RendezvousVia("cachefree")}},
				{8 << 20, []string{RendezvousVia("copy"), RendezvousVia("cachefree")}},
				{16 << 20, []string{RendezvousVia("copy"), RendezvousVia("cachefree")}},
			},
		},
		{
			// ... until the points hold maxReps round trips each.
			name: "a gap within noise, sampled enough",
			edit: func(t *Transport) {
				t.Methods[RendezvousVia("copy")] = spreadFrom(copyLarge, 1<<20, 0.6, 9)
				t.Methods[RendezvousVia("cachefree")] = spreadFrom(by(func(float64) float64 { return 1.2 }), 1<<20, 0.6, 9)
			},
			maxReps: 9,
			want:    nil,
		},
		{
			// Only the methods available are compared.
			name: "an unavailable method",
			edit: func(t *Transport) {
				t.Methods[RendezvousVia("vmsplice")] = by(func(x float64) float64 {
					if x >= 2<<20 {
						return 0.5
					}
					return 2
				})
			},
			maxReps: 100,
			want:    nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := base()
			tc.edit(tr)
			got := tr.Refine([]string{"copy", "cma", "cachefree"}, func(int64) int { return tc.maxReps })
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Refine = %v\nwant     %v", got, tc.want)
			}
		})
	}
}

// spreadFrom is spread from size from up.
func spreadFrom(c Curve, from int64, rel float64, reps int) Curve {
	i := slices.IndexFunc(c, func(s Sample) bool { return s.Size >= from })
	return append(c[:i:i], spread(c[i:], rel, reps)...)
}

// TestRefineConverges refines two curves that cross once, sampled at
// powers of two, by sampling the true curves wherever Refine asks: the
// threshold must close in on the true crossing, within MinStep, in a few
// rounds, and then Refine must ask for nothing more.
func TestRefineConverges(t *testing.T) {
	copyF := func(x float64) float64 { return 1000 + x/10 }
	iovF := func(x float64) float64 { return 1500 + x/20 } // crosses at 10000
	f := map[string]func(float64) float64{EagerCopy: copyF, EagerIovec: iovF}
	sizes := pow2(1, 512<<10)
	tr := &Transport{MaxEager: 512 << 10, Methods: map[string]Curve{
		EagerCopy:             curve(sizes, copyF),
		EagerIovec:            curve(sizes, iovF),
		RendezvousVia("copy"): curve(pow2(1, 16<<20), func(x float64) float64 { return 5000 + x/5 }),
	}}
	rounds := 0
	for ; rounds < 10; rounds++ {
		probes := tr.Refine(nil, func(int64) int { return 100 })
		if len(probes) == 0 {
			break
		}
		for _, p := range probes {
			for _, m := range p.Methods {
				c := append(tr.Methods[m], curve([]int64{p.Size}, f[m])...)
				slices.SortFunc(c, func(a, b Sample) int { return int(a.Size - b.Size) })
				tr.Methods[m] = c
			}
		}
	}
	tu, err := tr.tune("test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rounds > 4 || math.Abs(math.Log2(float64(tu.Iovec)/10000)) > math.Log2(MinStep) {
		t.Errorf("after %d rounds the iovec threshold is %d, want 10000 within an eighth of an octave", rounds, tu.Iovec)
	}
}
