package sample

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/profile"
)

func TestPlan(t *testing.T) {
	full, quick := NewPlan(false), NewPlan(true)
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"full sizes", len(full.Sizes), 48}, // 25 powers of two, 23 midpoints (none between 1 and 2)
		{"quick sizes", len(quick.Sizes), 25},
		{"first sizes", [4]int64{full.Sizes[0], full.Sizes[1], full.Sizes[2], full.Sizes[3]}, [4]int64{1, 2, 3, 4}},
		{"last size", full.Sizes[len(full.Sizes)-1], int64(MaxSize)},
		{"small messages get the most round trips", full.Reps(8), full.MaxRep},
		{"16M gets the fewest", full.Reps(16 << 20), full.MinRep},
		{"a quick pass times two at least", quick.Reps(16 << 20), 2},
		{"256K moves the block budget", full.Reps(256 << 10), budgetBytes / (256 << 10)},
		// 19 sizes ≤ 256K take part in the pair phase, 7 (the powers of
		// four from 1K to 4M) in the collective one; two refinement
		// stages.
		{"units", quick.Units(), quick.Blocks*(25+19) + 7*quick.Blocks + 2*refineUnits},
		{"quick collective sizes", len(collectiveSizes(quick)), 7},
		{"full collective sizes", len(collectiveSizes(full)), 29}, // 1K to 16M: 15 powers of two, 14 midpoints
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestPoint(t *testing.T) {
	b := func(ns ...time.Duration) []time.Duration { return ns }
	tests := []struct {
		name   string
		blocks [][]time.Duration
		want   profile.Sample
	}{
		{"one block, unsorted", [][]time.Duration{b(50, 10, 40, 20, 30)}, profile.Sample{Size: 64, Median: 30, P25: 20, P75: 40, Reps: 5}},
		// 41, and 15, are more than slowBlock × 11: those blocks ran while
		// something else had the processors.
		{"a slow block is left out", [][]time.Duration{b(40, 41, 42), b(10, 11, 12)}, profile.Sample{Size: 64, Median: 11, P25: 10.5, P75: 11.5, Reps: 3}},
		{"a block a third slower is left out", [][]time.Duration{b(14, 15, 16), b(10, 11, 12)}, profile.Sample{Size: 64, Median: 11, P25: 10.5, P75: 11.5, Reps: 3}},
		{"blocks within slowBlock are pooled", [][]time.Duration{b(10, 11, 12), b(12, 13, 14)}, profile.Sample{Size: 64, Median: 12, P25: 11.25, P75: 12.75, Reps: 6}},
		// The quantiles interpolate between the two closest round trips
		// (stats.Quantile): the median of an even count is the mean of
		// the middle two.
		{"even count", [][]time.Duration{b(13, 10, 12, 11)}, profile.Sample{Size: 64, Median: 11.5, P25: 10.75, P75: 12.25, Reps: 4}},
		// A timer reading of 0 ns (below the clock's resolution) becomes
		// 1 ns.
		{"zero times", [][]time.Duration{b(0, 0, 0)}, profile.Sample{Size: 64, Median: 1, P25: 1, P75: 1, Reps: 3}},
	}
	for _, tc := range tests {
		if p := point(64, tc.blocks); p != tc.want {
			t.Errorf("%s: point = %+v, want %+v", tc.name, p, tc.want)
		}
	}
}

func TestDropBumps(t *testing.T) {
	c := func(ms ...float64) profile.Curve {
		out := make(profile.Curve, len(ms))
		for i, m := range ms {
			out[i] = profile.Sample{Size: int64(1) << i, Median: m, P25: m, P75: m, Reps: 1}
		}
		return out
	}
	medians := func(c profile.Curve) []float64 {
		var out []float64
		for _, s := range c {
			out = append(out, s.Median)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		in, want []float64
	}{
		{"rising", []float64{1, 2, 4, 8}, []float64{1, 2, 4, 8}},
		{"a slowed point between two", []float64{8, 79, 12, 20}, []float64{8, 12, 20}},
		{"a step is kept", []float64{8, 9, 30, 31}, []float64{8, 9, 30, 31}},
		{"a rise within 1.5 times of the larger neighbour", []float64{8, 17, 12}, []float64{8, 17, 12}},
		{"the ends are kept", []float64{50, 2, 3, 90}, []float64{50, 2, 3, 90}},
	} {
		if got := medians(dropBumps(c(tc.in...))); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: dropBumps(%v) = %v, want %v", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestReportReader(t *testing.T) {
	var got []Report
	rr := NewReportReader(func(r Report) { got = append(got, r) })
	var b strings.Builder
	WriteReport(&b, Report{Done: 1, Total: 4, What: "tcp 1K"})
	WriteReport(&b, Report{Transport: "tcp", Result: &profile.Transport{MaxEager: 7}})
	data := b.String()
	for i := 0; i < len(data); i += 7 { // lines cut anywhere
		rr.Write([]byte(data[i:min(i+7, len(data))]))
	}
	if err := rr.Close(); err != nil || len(got) != 2 || got[0].What != "tcp 1K" || got[1].Result.MaxEager != 7 {
		t.Fatalf("reports %+v, %v", got, err)
	}
	rr = NewReportReader(func(Report) {})
	rr.Write([]byte("not json\n"))
	if err := rr.Close(); err == nil || !strings.Contains(err.Error(), "unreadable report") {
		t.Fatalf("garbage: %v", err)
	}
}

// TestRunLocal runs a tiny pass between two goroutine ranks: every method
// must come back with one sample per planned size it applies to.
func TestRunLocal(t *testing.T) {
	plan := Plan{Sizes: []int64{1, 1000, 300 << 10}, Blocks: 2, MinRep: 1, MaxRep: 3}
	var transport string
	var tr *profile.Transport
	var steps int
	var tap control.Tap
	err := commtune.Local(2, func(c *commtune.Comm) error {
		progress := func(done, total int, what string) { steps = done }
		name, res, err := Run(t.Context(), c, tap.Of(c.Rank()), plan, progress)
		if c.Rank() == 0 {
			transport, tr = name, res
		}
		return err
	}, config.WithTap(&tap))
	if err != nil {
		t.Fatal(err)
	}
	if transport != "inproc" || tr == nil || steps != plan.Units() {
		t.Fatalf("transport %q, result %v, %d of %d steps", transport, tr, steps, plan.Units())
	}
	want := map[string]int{
		profile.EagerCopy: 3, profile.EagerIovec: 3, profile.Rendezvous: 3,
		profile.TwoPackets: 2, profile.Aggregated: 2, // pairs stop at 256K
	}
	for m, n := range want {
		c := tr.Methods[m]
		if len(c) != n {
			t.Errorf("%s: %d samples, want %d", m, len(c), n)
			continue
		}
		for _, s := range c {
			if r := plan.Reps(s.Size); s.Median <= 0 || s.Reps%r != 0 || s.Reps < r || s.Reps > (plan.Blocks+maxRedo)*r { // whole blocks, a slow one left out, some timed again
				t.Errorf("%s: sample %+v", m, s)
			}
		}
	}
	// The collective over each path at the one size from minCollective
	// (300K, whose halves an eager method carries).
	for m, n := range map[string]int{profile.EagerCopy: 1, profile.EagerIovec: 1, profile.Rendezvous: 1} {
		if c := tr.Collectives[profile.Collective][m]; len(c) != n {
			t.Errorf("%s over %s: %d samples, want %d", profile.Collective, m, len(c), n)
		}
	}
	p := &profile.Profile{Version: profile.Version, Transports: map[string]*profile.Transport{"inproc": tr}}
	if err := p.Validate(); err != nil {
		t.Fatalf("the result is not a valid profile: %v", err)
	}
}

// TestShareItems: rank 1 gets rank 0's refinement items, sizes and
// methods, through the bit per method.
func TestShareItems(t *testing.T) {
	methods := []Method{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	sent := []item{{size: 5793, methods: []Method{methods[0], methods[2]}}, {size: 1 << 40, methods: methods[1:2]}}
	var got []item
	var tap control.Tap
	err := commtune.Local(2, func(c *commtune.Comm) error {
		s := newSampler(t.Context(), c, tap.Of(c.Rank()), Plan{}, nil, 0)
		var mine []item
		if c.Rank() == 0 {
			mine = sent
		}
		items, err := s.shareItems(mine, methods)
		if c.Rank() == 1 {
			got = items
		}
		return err
	}, config.WithTap(&tap))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(sent) {
		t.Fatalf("rank 1 got %v, want %v", got, sent)
	}
}

// TestRunRefines runs a pass with refinement between two goroutine ranks:
// both walk the same rounds (the pass ends), and every curve stays a
// valid profile's, however many sizes refinement added.
func TestRunRefines(t *testing.T) {
	plan := Plan{Sizes: []int64{1, 64, 4096, 300 << 10}, Blocks: 2, MinRep: 1, MaxRep: 3, Refine: 50 * time.Millisecond}
	var tr *profile.Transport
	var tap control.Tap
	err := commtune.Local(2, func(c *commtune.Comm) error {
		_, res, err := Run(t.Context(), c, tap.Of(c.Rank()), plan, nil)
		if c.Rank() == 0 {
			tr = res
		}
		return err
	}, config.WithTap(&tap))
	if err != nil {
		t.Fatal(err)
	}
	p := &profile.Profile{Version: profile.Version, Transports: map[string]*profile.Transport{"inproc": tr}}
	if err := p.Validate(); err != nil {
		t.Fatalf("the result is not a valid profile: %v", err)
	}
	for _, m := range []string{profile.EagerCopy, profile.EagerIovec, profile.Rendezvous} {
		if len(tr.Methods[m]) < 3 {
			t.Errorf("%s: %d samples", m, len(tr.Methods[m]))
		}
	}
}
