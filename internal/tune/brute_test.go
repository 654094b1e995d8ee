package tune

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/testenv"
)

// cluster simulates the ranks of a job timing the same calls: on each
// rank, independently, a call of an implementation whose true time is m
// takes m·max(0.1, 1+noise·N(0,1)), and spike times that with probability
// spikeP (another job, an interrupt: the outliers of seed 003 §II-A).
type cluster struct {
	ranks  int
	noise  float64
	spikeP float64
	spike  float64
	rng    *rand.Rand
}

func (c *cluster) time(m float64) float64 {
	x := m * max(0.1, 1+c.noise*c.rng.NormFloat64())
	if c.spikeP > 0 && c.rng.Float64() < c.spikeP {
		x *= c.spike
	}
	return x
}

// reduceMax is the caller's allreduce: the element-wise maximum over the
// ranks' local vectors.
func reduceMax(locals [][]float64) []float64 {
	out := slices.Clone(locals[0])
	for _, l := range locals[1:] {
		for i, x := range l {
			out[i] = max(out[i], x)
		}
	}
	return out
}

// runBrute drives one BruteForce per rank to its decision and returns the
// winner and the calls it took.
func runBrute(t testing.TB, names []string, cost func(string) float64, cfg BruteConfig, c *cluster) (string, int) {
	t.Helper()
	sel := make([]*BruteForce, c.ranks)
	for r := range sel {
		b, err := NewBruteForce(names, cfg)
		if err != nil {
			t.Fatal(err)
		}
		sel[r] = b
	}
	for range cfg.withDefaults().Samples*len(names) + 2 {
		name, done := sel[0].Next()
		for r, b := range sel[1:] {
			if n, d := b.Next(); n != name || d != done {
				t.Fatalf("rank %d: Next = %q, %v; rank 0: %q, %v", r+1, n, d, name, done)
			}
		}
		if !done {
			if sel[0].winner != "" {
				return name, sel[0].Calls()
			}
			for _, b := range sel {
				if err := b.Record(name, c.time(cost(name))); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		locals := make([][]float64, len(sel))
		for r, b := range sel {
			locals[r] = b.Local()
		}
		g := reduceMax(locals)
		if sel[0].Dropping() {
			for r, b := range sel {
				if _, _, err := b.Drop(g); err != nil || !slices.Equal(b.Names(), sel[0].Names()) {
					t.Fatalf("rank %d: Drop: %v; goes on with %v, rank 0 with %v", r, err, b.Names(), sel[0].Names())
				}
			}
			continue
		}
		var winner string
		for r, b := range sel {
			w, err := b.Decide(g)
			if err != nil || (r > 0 && w != winner) {
				t.Fatalf("rank %d: Decide = %q, %v; rank 0 chose %q", r, w, err, winner)
			}
			winner = w
		}
		return winner, sel[0].Calls()
	}
	t.Fatalf("no decision after %d calls", sel[0].Calls())
	return "", 0
}

// TestBruteForceFindsBest: 20 implementations of known times, 5% noise
// and 10× spikes in 2% of the calls on each of 4 ranks; over 1000 seeds
// brute force picks the best, or one within 5% of it, in at least 99%,
// in 20·N calls or, where some were dropped early, Probe·20 and N for
// each of the others; with the early drop off, always 20·N.
func TestBruteForceFindsBest(t *testing.T) {
	testenv.SkipUnderRace(t, "simulated selections in one goroutine")
	const seeds, impls, ranks = 1000, 20, 4
	names := make([]string, impls)
	for i := range names {
		names[i] = fmt.Sprintf("impl%02d", i)
	}
	tests := []struct {
		name string
		cfg  BruteConfig
	}{
		{"default N", BruteConfig{}},
		{"N=5", BruteConfig{Samples: 5}},
		{"no early drop", BruteConfig{DropRatio: math.Inf(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.cfg.withDefaults().Samples
			good, exact, dropped := 0, 0, 0
			for seed := range uint64(seeds) {
				rng := rand.New(rand.NewPCG(seed, 3))
				means := map[string]float64{}
				for _, nm := range names {
					means[nm] = 1e-3 * (1 + rng.Float64())
				}
				c := &cluster{ranks: ranks, noise: 0.05, spikeP: 0.02, spike: 10, rng: rng}
				w, calls := runBrute(t, names, func(nm string) float64 { return means[nm] }, tt.cfg, c)
				cfg := tt.cfg.withDefaults()
				kept := impls - (impls*n-calls)/(n-cfg.Probe)
				if (impls*n-calls)%(n-cfg.Probe) != 0 || calls > impls*n || math.IsInf(cfg.DropRatio, 1) && calls != impls*n {
					t.Fatalf("seed %d: %d calls, want %d, or %d probes and %d for those kept", seed, calls, impls*n, cfg.Probe, n)
				}
				dropped += impls - kept
				best := slices.MinFunc(names, func(a, b string) int { return cmpFloat(means[a], means[b]) })
				if w == best {
					exact++
				}
				if means[w] <= 1.05*means[best] {
					good++
				}
			}
			t.Logf("N=%d: best or within 5%% in %d of %d seeds, the best itself in %d; %d dropped early", n, good, seeds, exact, dropped)
			if good < seeds*99/100 {
				t.Fatalf("best or within 5%% in %d of %d seeds, want at least 99%%", good, seeds)
			}
		})
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestBruteForceOrder: round robin by default, in a row when Consecutive;
// each sample is filed under its own implementation either way.
func TestBruteForceOrder(t *testing.T) {
	for _, tc := range []struct {
		consecutive bool
		want        []string
	}{
		{false, []string{"a", "b", "c", "a", "b", "c"}},
		{true, []string{"a", "a", "b", "b", "c", "c"}},
	} {
		b, err := NewBruteForce([]string{"a", "b", "c"}, BruteConfig{Samples: 2, Consecutive: tc.consecutive})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		times := map[string]float64{"a": 3, "b": 1, "c": 2}
		for {
			name, done := b.Next()
			if done {
				break
			}
			order = append(order, name)
			if err := b.Record(name, times[name]); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(order, tc.want) {
			t.Errorf("consecutive %v: order %v, want %v", tc.consecutive, order, tc.want)
		}
		if got := b.Local(); !slices.Equal(got, []float64{3, 1, 2}) {
			t.Errorf("consecutive %v: Local = %v", tc.consecutive, got)
		}
	}
}

// TestBruteForceProtocol: round robin order, Next after Decide, and the
// refusals.
func TestBruteForceProtocol(t *testing.T) {
	b, err := NewBruteForce([]string{"a", "b", "c"}, BruteConfig{Samples: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Decide([]float64{1, 2, 3}); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Decide before the measurements = %v, want ErrNotReady", err)
	}
	if err := b.Record("b", 1); !errors.Is(err, ErrUnexpectedRecord) {
		t.Fatalf("Record of the wrong name = %v, want ErrUnexpectedRecord", err)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := b.Record("a", bad); !errors.Is(err, ErrUnexpectedRecord) {
			t.Fatalf("Record(a, %v) = %v, want ErrUnexpectedRecord", bad, err)
		}
	}
	var order []string
	times := map[string]float64{"a": 3, "b": 1, "c": 2}
	for {
		name, done := b.Next()
		if done {
			if name != "" {
				t.Fatalf("Next = %q, true; want no name while awaiting Decide", name)
			}
			break
		}
		order = append(order, name)
		if err := b.Record(name, times[name]); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"a", "b", "c", "a", "b", "c"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want round robin %v", order, want)
	}
	if err := b.Record("a", 1); !errors.Is(err, ErrUnexpectedRecord) {
		t.Fatalf("Record once all measured = %v, want ErrUnexpectedRecord", err)
	}
	if got := b.Local(); !slices.Equal(got, []float64{3, 1, 2}) {
		t.Fatalf("Local = %v", got)
	}
	for _, bad := range [][]float64{{1, 2}, {1, 2, 3, 4}, {1, math.NaN(), 3}, {1, -2, 3}, {math.Inf(1), 1, 1}} {
		if _, err := b.Decide(bad); !errors.Is(err, ErrBadReduction) {
			t.Fatalf("Decide(%v) = %v, want ErrBadReduction", bad, err)
		}
	}
	w, err := b.Decide([]float64{2, 1, 1})
	if err != nil || w != "b" {
		t.Fatalf("Decide = %q, %v; want b, the first of equals", w, err)
	}
	for range 3 {
		if name, done := b.Next(); name != "b" || done {
			t.Fatalf("Next after Decide = %q, %v; want b, false", name, done)
		}
		if err := b.Record("b", 1); err != nil {
			t.Fatalf("Record after Decide = %v, want it ignored", err)
		}
	}
	if b.Calls() != 6 {
		t.Fatalf("Calls = %d, want 6", b.Calls())
	}
	if _, err := b.Decide([]float64{1, 1, 1}); !errors.Is(err, ErrNotReady) {
		t.Fatalf("second Decide = %v, want ErrNotReady", err)
	}
}

func TestNewBruteForce(t *testing.T) {
	tests := []struct {
		name  string
		names []string
		cfg   BruteConfig
		err   error  // nil: accepted
		msg   string // substring of a config error
	}{
		{"ok", []string{"a", "b"}, BruteConfig{}, nil, ""},
		{"one name wins at once", []string{"a"}, BruteConfig{}, nil, ""},
		{"no names", nil, BruteConfig{}, ErrNoCandidates, ""},
		{"empty name", []string{"a", ""}, BruteConfig{}, ErrNoName, ""},
		{"duplicate", []string{"a", "b", "a"}, BruteConfig{}, ErrDuplicate, ""},
		{"N < 1", []string{"a", "b"}, BruteConfig{Samples: -1}, nil, "tune: Samples -1 is negative"},
		{"bad filter", []string{"a", "b"}, BruteConfig{Filter: FilterConfig{Ratio: 0.5}}, nil, "Ratio 0.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := NewBruteForce(tt.names, tt.cfg)
			switch {
			case tt.msg != "":
				if err == nil || err.Error() != tt.cfg.Validate().Error() || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("NewBruteForce = %v, want %q", err, tt.msg)
				}
			case tt.err != nil:
				if !errors.Is(err, tt.err) {
					t.Fatalf("NewBruteForce = %v, want %v", err, tt.err)
				}
			case err != nil:
				t.Fatal(err)
			case len(tt.names) == 1:
				if name, done := b.Next(); name != "a" || done || b.Calls() != 0 {
					t.Fatalf("single name: Next = %q, %v after %d calls", name, done, b.Calls())
				}
			default:
				if got := b.Config(); got.Samples != DefaultSamples || got.Filter.Ratio != DefaultOutlierRatio {
					t.Fatalf("Config = %+v, want the defaults", got)
				}
			}
		})
	}
}

// TestBruteForceDropsHopeless: after Probe samples of each, those whose
// quickest probe (max over ranks) reaches DropRatio times the fastest's
// go no further; one stalled probe of a good one does not drop it; a
// consecutive campaign, or DropRatio +Inf, drops nothing.
func TestBruteForceDropsHopeless(t *testing.T) {
	cost := map[string]float64{"fast": 1, "near": 1.5, "slow": 2.5, "awful": 8}
	names := []string{"fast", "near", "slow", "awful"}
	for _, tc := range []struct {
		name    string
		cfg     BruteConfig
		stall   string // its first probe on rank 1 takes 100x
		kept    []string
		calls   int
		winners []string
	}{
		{"default", BruteConfig{}, "", []string{"fast", "near"}, 3*4 + 7*2, []string{"fast"}},
		{"stalled probe kept", BruteConfig{}, "fast", []string{"fast", "near"}, 3*4 + 7*2, []string{"fast"}},
		{"wider ratio", BruteConfig{DropRatio: 3}, "", []string{"fast", "near", "slow"}, 3*4 + 7*3, []string{"fast"}},
		{"consecutive", BruteConfig{Consecutive: true}, "", names, 10 * 4, []string{"fast"}},
		{"off", BruteConfig{DropRatio: math.Inf(1)}, "", names, 10 * 4, []string{"fast"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel := make([]*BruteForce, 2)
			for r := range sel {
				b, err := NewBruteForce(names, tc.cfg)
				if err != nil {
					t.Fatal(err)
				}
				sel[r] = b
			}
			seen := map[string]int{}
			for {
				name, done := sel[0].Next()
				if done && sel[0].Dropping() {
					g := reduceMax([][]float64{sel[0].Local(), sel[1].Local()})
					for _, b := range sel {
						if _, _, err := b.Drop(g); err != nil {
							t.Fatal(err)
						}
					}
					if got := sel[0].Names(); !slices.Equal(got, tc.kept) {
						t.Errorf("kept %v, want %v", got, tc.kept)
					}
					continue
				}
				if done {
					g := reduceMax([][]float64{sel[0].Local(), sel[1].Local()})
					w, err := sel[0].Decide(g)
					if err != nil || !slices.Contains(tc.winners, w) {
						t.Errorf("Decide = %q, %v", w, err)
					}
					break
				}
				seen[name]++
				for r, b := range sel {
					d := cost[name]
					if r == 1 && name == tc.stall && seen[name] == 1 {
						d *= 100
					}
					if err := b.Record(name, d); err != nil {
						t.Fatal(err)
					}
				}
			}
			if c := sel[0].Calls(); c != tc.calls {
				t.Errorf("%d calls, want %d", c, tc.calls)
			}
			if tc.name == "consecutive" || tc.name == "off" {
				if sel[0].Dropping() || len(sel[0].Names()) != len(names) {
					t.Errorf("dropped some: %v", sel[0].Names())
				}
			}
		})
	}
	for _, bad := range []BruteConfig{{Probe: -1}, {DropRatio: 1}, {DropRatio: 0.5}, {DropRatio: math.NaN()}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: valid", bad)
		}
	}
}
