package tune

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// adaptiveRanks drives one Adaptive per rank for calls calls, each call's
// time given by cost(rank, call, name); every reduction is the true MAX
// over the ranks. It checks that the ranks run the same implementation at
// every call and returns rank 0's Adaptive and the names it ran.
func adaptiveRanks(t *testing.T, ranks, calls int, cfg AdaptiveConfig, cost func(rank, call int, name string) float64) (*Adaptive, []string) {
	t.Helper()
	as := make([]*Adaptive, ranks)
	for r := range as {
		a, err := NewAdaptive(adclTable(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		as[r] = a
	}
	var ran []string
	for k := range calls {
		name := as[0].Next()
		ran = append(ran, name)
		var locals [][]float64
		for r, a := range as {
			if got := a.Next(); got != name {
				t.Fatalf("call %d: rank %d runs %s, rank 0 %s", k, r, got, name)
			}
			local, err := a.Record(name, cost(r, k, name))
			if err != nil {
				t.Fatalf("call %d rank %d: %v", k, r, err)
			}
			locals = append(locals, local)
		}
		if locals[0] == nil {
			for r := range locals {
				if locals[r] != nil {
					t.Fatalf("call %d: rank %d asks for a reduction, rank 0 does not", k, r)
				}
			}
			continue
		}
		global := make([]float64, len(locals[0]))
		for i := range global {
			global[i] = math.Inf(-1)
			for r := range locals {
				global[i] = max(global[i], locals[r][i])
			}
		}
		for r, a := range as {
			if _, err := a.Reduced(global); err != nil {
				t.Fatalf("call %d rank %d: Reduced: %v", k, r, err)
			}
		}
	}
	return as[0], ran
}

// separableCost gives each implementation a time that adds one term per
// attribute, so that the hypothesis selector's assumption holds: best's
// values cost nothing, any other partners 0.5 ms, data 0.3 ms, primitive
// 0.2 ms plus 0.05 ms per position; the base is 1 ms, and rank r adds r µs.
func separableCost(best string) func(rank, call int, name string) float64 {
	entries := map[string]Entry[struct{}]{}
	for _, e := range adclTable() {
		entries[e.Name] = e
	}
	want := entries[best].AttrMap()
	return func(rank, call int, name string) float64 {
		e := entries[name]
		have := e.AttrMap()
		t := 1e-3 + float64(rank)*1e-6
		if have["partners"] != want["partners"] {
			t += 5e-4
		}
		if have["data"] != want["data"] {
			t += 3e-4
		}
		if have["primitive"] != want["primitive"] {
			t += 2e-4 + 5e-5*float64(attrIndex(e, "primitive", adclPrimitives))
		}
		return t
	}
}

func TestAdaptiveSelects(t *testing.T) {
	const best = "SendIrecv_pair_ddt"
	for _, tc := range []struct {
		method   string
		maxCalls int
	}{
		{MethodBrute, 200},
		{MethodHypothesis, 100},
		{MethodLearn, 264},
	} {
		t.Run(tc.method, func(t *testing.T) {
			cfg := AdaptiveConfig{Method: tc.method}
			a, ran := adaptiveRanks(t, 3, 400, cfg, separableCost(best))
			w, base := a.Winner()
			if w != best {
				t.Fatalf("winner %s, want %s\n%s", w, best, strings.Join(a.Explain(), "\n"))
			}
			if base < 1e-3 || base > 1.01e-3 {
				t.Errorf("chosen on %g s, want the max over ranks of about 1 ms", base)
			}
			if a.Calls() > tc.maxCalls || a.Selections() != 1 {
				t.Errorf("%d calls, %d selections; want at most %d calls, 1 selection", a.Calls(), a.Selections(), tc.maxCalls)
			}
			for k := a.Calls(); k < len(ran); k++ {
				if ran[k] != best {
					t.Fatalf("call %d ran %s after the decision", k, ran[k])
				}
			}
		})
	}
}

func TestAdaptiveDrift(t *testing.T) {
	const first, second = "IsendIrecv_aao_pack", "Get_pair_ddt"
	// Until call 600, first is fastest; from then on second is, and every
	// implementation is slower (first 3.3 times).
	cost := func(rank, call int, name string) float64 {
		if call >= 600 {
			return 2 * separableCost(second)(rank, call, name)
		}
		return separableCost(first)(rank, call, name)
	}
	for _, tc := range []struct {
		name    string
		cfg     AdaptiveConfig
		resumed bool
	}{
		{"brute", AdaptiveConfig{}, true},
		{"hypothesis", AdaptiveConfig{Method: MethodHypothesis}, true},
		{"learn", AdaptiveConfig{Method: MethodLearn}, true},
		{"drift below the factor", AdaptiveConfig{DriftFactor: 5}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ran := adaptiveRanks(t, 2, 1400, tc.cfg, cost)
			if got := a.Selections() > 1; got != tc.resumed {
				t.Fatalf("%d selections, resumed %v, want %v\n%s", a.Selections(), got, tc.resumed, strings.Join(a.Explain(), "\n"))
			}
			w, _ := a.Winner()
			want := first
			if tc.resumed {
				want = second
			}
			if w != want || ran[len(ran)-1] != want {
				t.Fatalf("winner %s, last call %s, want %s", w, ran[len(ran)-1], want)
			}
			if !tc.resumed {
				return
			}
			// The watch fires within DriftWindows windows (plus the one
			// the change falls in) of the change.
			restart := -1
			for k := 600; k < len(ran); k++ {
				if ran[k] != first {
					restart = k
					break
				}
			}
			cfg := a.Config()
			if lim := 600 + (cfg.DriftWindows+1)*cfg.WatchWindow; restart < 0 || restart > lim {
				t.Errorf("re-selection began at call %d, want by %d", restart, lim)
			}
		})
	}
}

// TestAdaptiveWatchNoise: windows spread evenly between 1 and 1.7 times
// the winner's time, as on a busy machine, with no change of conditions,
// never resume the selection; the best window as the baseline would (a
// window above 1.5× it comes three times in ten).
func TestAdaptiveWatchNoise(t *testing.T) {
	const best = "IsendIrecv_aao_pack"
	cost := func(rank, call int, name string) float64 {
		x := uint64(call/DefaultWatchWindow+1) * 0x9E3779B97F4A7C15 // one draw per window
		x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
		x = (x ^ x>>27) * 0x94D049BB133111EB
		noise := float64((x^x>>31)>>40) / float64(1<<24) // in [0, 1)
		return separableCost(best)(rank, call, name) * (1 + 0.7*noise)
	}
	a, _ := adaptiveRanks(t, 2, 3000, AdaptiveConfig{}, cost)
	if a.Selections() != 1 {
		t.Fatalf("%d selections without a change of conditions\n%s", a.Selections(), strings.Join(a.Explain(), "\n"))
	}
}

func TestAdaptiveResume(t *testing.T) {
	a, err := NewAdaptive(adclTable(), AdaptiveConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Resume("nope", 1e-3); err == nil {
		t.Fatal("Resume on a name not a candidate: no error")
	}
	if err := a.Resume("Put_aao_pack", 0); err == nil {
		t.Fatal("Resume with a zero baseline: no error")
	}
	if !a.Exploring() {
		t.Fatal("a refused Resume left the selection")
	}
	if err := a.Resume("Put_aao_pack", 1e-3); err != nil {
		t.Fatal(err)
	}
	for k := range 100 {
		if n := a.Next(); n != "Put_aao_pack" {
			t.Fatalf("call %d after Resume runs %s", k, n)
		}
		local, err := a.Record("Put_aao_pack", 1e-3)
		if err != nil {
			t.Fatal(err)
		}
		if (local != nil) != ((k+1)%DefaultWatchWindow == 0) {
			t.Fatalf("call %d: reduction %v, want one every %d calls", k, local, DefaultWatchWindow)
		}
		if local != nil {
			if _, err := a.Reduced(local); err != nil {
				t.Fatal(err)
			}
		}
	}
	if a.Calls() != 0 || a.Selections() != 1 {
		t.Fatalf("Calls %d Selections %d, want 0 and 1", a.Calls(), a.Selections())
	}
}

func TestAdaptiveProtocol(t *testing.T) {
	a, err := NewAdaptive(adclTable()[:2], AdaptiveConfig{Hypothesis: HypothesisConfig{Samples: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reduced([]float64{1}); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Reduced with nothing pending: %v, want ErrNotReady", err)
	}
	first := a.Next()
	if _, err := a.Record("wrong", 1); !errors.Is(err, ErrUnexpectedRecord) {
		t.Fatalf("Record of another name: %v", err)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := a.Record(first, bad); !errors.Is(err, ErrUnexpectedRecord) {
			t.Fatalf("Record(%g): %v", bad, err)
		}
	}
	if _, err := a.Record(first, 1); err != nil {
		t.Fatal(err)
	}
	second := a.Next()
	local, err := a.Record(second, 2)
	if err != nil || len(local) != 2 {
		t.Fatalf("last sample: local %v, err %v; want a vector of 2", local, err)
	}
	if _, err := a.Record(a.Next(), 1); !errors.Is(err, ErrUnexpectedRecord) {
		t.Fatalf("Record with a reduction pending: %v", err)
	}
	if _, err := a.Reduced([]float64{1}); !errors.Is(err, ErrBadReduction) {
		t.Fatalf("Reduced of a short vector: %v", err)
	}
	decided, err := a.Reduced(local)
	if err != nil || !decided {
		t.Fatalf("Reduced = %v, %v", decided, err)
	}
	if w, _ := a.Winner(); w != first {
		t.Fatalf("winner %s, want %s", w, first)
	}
}

func TestAdaptiveConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg AdaptiveConfig
		ok  bool
	}{
		{AdaptiveConfig{}, true},
		{AdaptiveConfig{Method: MethodHypothesis, WatchWindow: 8, DriftFactor: 1.2, DriftWindows: 3}, true},
		{AdaptiveConfig{Method: "lottery"}, false},
		{AdaptiveConfig{Method: MethodLearn, First: []string{"x"}, ProbeEvery: 64, Race: RaceConfig{Turn: 4}}, true},
		{AdaptiveConfig{Method: MethodLearn, ProbeEvery: -1}, false},
		{AdaptiveConfig{Method: MethodLearn, Race: RaceConfig{Turn: 1}}, false},
		{AdaptiveConfig{WatchWindow: -1}, false},
		{AdaptiveConfig{DriftFactor: 1}, false},
		{AdaptiveConfig{DriftFactor: math.Inf(1)}, false},
		{AdaptiveConfig{DriftWindows: -2}, false},
		{AdaptiveConfig{Hypothesis: HypothesisConfig{Samples: -1}}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: Validate = %v, want ok %v", tc.cfg, err, tc.ok)
		}
	}
}

// TestAdaptiveProbe: the prior races two candidates that are not the
// best; the winner's probes visit the others and a rematch makes the best
// the winner, without a drift.
func TestAdaptiveProbe(t *testing.T) {
	const best = "SendIrecv_pair_ddt"
	cfg := AdaptiveConfig{Method: MethodLearn, First: []string{"IsendIrecv_aao_pack", "SendRecv_pair_pack", "no such"}, ProbeEvery: 32}
	a, ran := adaptiveRanks(t, 3, 2000, cfg, separableCost(best))
	w, _ := a.Winner()
	log := strings.Join(a.Explain(), "\n")
	if w != best || ran[len(ran)-1] != best {
		t.Fatalf("winner %s, last call %s, want %s\n%s", w, ran[len(ran)-1], best, log)
	}
	if !strings.Contains(log, "race over 2 of 20 implementations") || !strings.Contains(log, "probe of "+best) {
		t.Errorf("the log does not show the prior's race and the probe that found %s:\n%s", best, log)
	}
	// Probes and rematches cost a share of the calls, not the run.
	n := 0
	for _, name := range ran[len(ran)-500:] {
		if name != best {
			n++
		}
	}
	if n > 500/cfg.ProbeEvery*DefaultTurn {
		t.Errorf("%d of the last 500 calls ran another implementation than the winner", n)
	}
}
