package tune

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// raceRanks drives one Race per rank to its decision, each call's time
// given by cost(rank, name, prev), prev being the candidate of the call
// before; every reduction is the true MAX over the ranks. It returns the
// winner, the calls and the reductions.
func raceRanks(t *testing.T, ranks int, names []string, cfg RaceConfig, cost func(rank int, name, prev string) float64) (winner string, calls, reductions int) {
	t.Helper()
	rs := make([]*Race, ranks)
	for i := range rs {
		r, err := NewRace(names, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = r
	}
	prev := ""
	for calls = 0; calls < 10000; calls++ {
		name, due := rs[0].Next()
		if !due && rs[0].winner != "" {
			return name, rs[0].Calls(), reductions
		}
		if due {
			reductions++
			global := make([]float64, len(rs[0].Names()))
			for i := range global {
				global[i] = math.Inf(-1)
			}
			for _, r := range rs {
				for i, x := range r.Local() {
					global[i] = max(global[i], x)
				}
			}
			for i, r := range rs {
				if _, err := r.Reduced(global); err != nil {
					t.Fatalf("rank %d: Reduced: %v", i, err)
				}
			}
			continue
		}
		for i, r := range rs {
			if got, _ := r.Next(); got != name {
				t.Fatalf("call %d: rank %d runs %s, rank 0 %s", calls, i, got, name)
			}
			if err := r.Record(name, cost(i, name, prev)); err != nil {
				t.Fatalf("call %d rank %d: %v", calls, i, err)
			}
		}
		prev = name
	}
	t.Fatal("no decision after 10000 calls")
	return
}

func raceNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('a' + i))
	}
	return out
}

// TestRaceBudget: the calls and reductions a race costs, as its doc says.
func TestRaceBudget(t *testing.T) {
	for _, tc := range []struct {
		n, turn, calls, reductions int
	}{
		{2, 3, 48, 1},
		{3, 3, 9 + 48, 2},
		{6, 3, 18 + 18 + 48, 3},
		{20, 3, 60 + 60 + 60 + 36 + 48, 5},
		{6, 2, 12 + 12 + 32, 3},
	} {
		// Candidate i costs 1+i/100 ms: the first always wins.
		w, calls, red := raceRanks(t, 2, raceNames(tc.n), RaceConfig{Turn: tc.turn}, func(_ int, name, _ string) float64 {
			return 1e-3 * (1 + float64(name[0]-'a')/100)
		})
		if w != "a" || calls != tc.calls || red != tc.reductions {
			t.Errorf("%d candidates, turn %d: %s after %d calls, %d reductions; want a, %d, %d",
				tc.n, tc.turn, w, calls, red, tc.calls, tc.reductions)
		}
	}
	if w, calls, _ := raceRanks(t, 1, []string{"only"}, RaceConfig{}, nil); w != "only" || calls != 0 {
		t.Errorf("one candidate: %s after %d calls, want it at once", w, calls)
	}
}

// TestRaceNoise: heavy-tailed noise on every rank (one call in ten takes
// 3 to 8 times longer); the best of six, 10 % ahead of the second, wins in
// at least 90 of 100 seeds, and never one 30 % behind.
func TestRaceNoise(t *testing.T) {
	means := map[string]float64{"a": 1.3, "b": 1.1, "c": 1.0, "d": 1.2, "e": 2.5, "f": 1.15}
	names := []string{"a", "b", "c", "d", "e", "f"}
	wins := 0
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 47))
		w, _, _ := raceRanks(t, 4, names, RaceConfig{}, func(_ int, name, _ string) float64 {
			x := means[name] * (1 + 0.1*rng.NormFloat64())
			if rng.IntN(10) == 0 {
				x *= 3 + 5*rng.Float64()
			}
			return 1e-3 * max(x, 0.1)
		})
		if w == "c" {
			wins++
		}
		if means[w] >= 1.3 {
			t.Errorf("seed %d: %s (%.2f) won", seed, w, means[w])
		}
	}
	if wins < 90 {
		t.Errorf("the best won in %d of 100 seeds, want at least 90", wins)
	}
	if testing.Verbose() {
		t.Logf("the best won in %d of 100 seeds", wins)
	}
}

// TestRaceAttribution: "fast" takes 1 ms but leaves the ranks out of step,
// so that the call after it takes 1.5 ms more; "steady" takes 1.8 ms. Run
// after itself, fast costs 2.5 ms a call: a race picks steady, where a
// campaign timing each call after another candidate's would charge the
// 1.5 ms to steady.
func TestRaceAttribution(t *testing.T) {
	w, _, _ := raceRanks(t, 2, []string{"fast", "steady"}, RaceConfig{}, func(_ int, name, prev string) float64 {
		x := map[string]float64{"fast": 1e-3, "steady": 1.8e-3}[name]
		if prev == "fast" {
			x += 1.5e-3
		}
		return x
	})
	if w != "steady" {
		t.Errorf("%s won, want steady", w)
	}
}

func TestRaceFigure(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{5}, 5},
		{[]float64{9, 1}, 1},
		{[]float64{1, 2, 30}, 1.5},
		{[]float64{4, 1, 2, 3, 100, 5, 6, 7}, 3.5}, // two of eight out
	} {
		if got := RaceFigure(tc.in); got != tc.want {
			t.Errorf("RaceFigure(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := RaceFigure(nil); !math.IsNaN(got) {
		t.Errorf("RaceFigure(nil) = %v, want NaN", got)
	}
}

func TestRaceProtocol(t *testing.T) {
	r, err := NewRace([]string{"a", "b", "c"}, RaceConfig{Turn: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Record("b", 1); !errors.Is(err, ErrUnexpectedRecord) {
		t.Errorf("wrong name: %v", err)
	}
	if err := r.Record("a", math.NaN()); !errors.Is(err, ErrUnexpectedRecord) {
		t.Errorf("NaN: %v", err)
	}
	if _, err := r.Reduced([]float64{1, 1, 1}); !errors.Is(err, ErrNotReady) {
		t.Errorf("early reduction: %v", err)
	}
	for _, n := range []string{"a", "a", "b", "b", "c", "c"} {
		if err := r.Record(n, 1e-3); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Record("a", 1e-3); !errors.Is(err, ErrUnexpectedRecord) {
		t.Errorf("record while a reduction is due: %v", err)
	}
	for _, bad := range [][]float64{{1, 1}, {1, math.Inf(1), 1}, {1, -1, 1}} {
		if _, err := r.Reduced(bad); !errors.Is(err, ErrBadReduction) {
			t.Errorf("Reduced(%v): %v", bad, err)
		}
	}
	// c is 2x the leader: out whatever the halving keeps; b is second.
	if w, err := r.Reduced([]float64{1e-3, 1.5e-3, 2e-3}); err != nil || w != "" {
		t.Fatalf("Reduced: %q, %v", w, err)
	}
	if got := r.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("left in %v, want [a b]", got)
	}
	if !strings.Contains(strings.Join(r.Explain(), "\n"), "c 0.002 s out") {
		t.Errorf("explain does not say c went out:\n%s", strings.Join(r.Explain(), "\n"))
	}
	for _, bad := range []RaceConfig{{Turn: 1}, {DropRatio: 1}, {DropRatio: math.NaN()}} {
		if _, err := NewRace([]string{"a"}, bad); err == nil {
			t.Errorf("NewRace accepted %+v", bad)
		}
	}
	for _, bad := range [][]string{nil, {"a", "a"}, {""}} {
		if _, err := NewRace(bad, RaceConfig{}); err == nil {
			t.Errorf("NewRace accepted names %q", bad)
		}
	}
}
