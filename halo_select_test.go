package commtune

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/tune"
)

// haloSamples sets Config.HaloSamples.
func haloSamples(n int) Option { return func(c *Config) { c.HaloSamples = n } }

// haloState sets Config.HaloState.
func haloState(path string) Option { return func(c *Config) { c.HaloState = path } }

// TestHaloSelectionExact runs every selection through exploration and
// past the decision (the learning one past its first probe), every
// exchange checked against the reference.
func TestHaloSelectionExact(t *testing.T) {
	for _, order := range []string{HaloOrderInterleaved, HaloOrderConsecutive} {
		for _, method := range []string{HaloSelectBrute, HaloSelectHypothesis} {
			haloSelectionExact(t, method, order, 2*len(HaloImpls())+40)
		}
	}
	haloSelectionExact(t, HaloSelectLearn, HaloOrderInterleaved, 300)
	// A bad order set by an Option is refused naming its field.
	err := Local(1, func(*Comm) error { return nil }, func(c *Config) { c.HaloOrder = "sideways" })
	if err == nil || !strings.Contains(err.Error(), "Config.HaloOrder") {
		t.Fatalf("order sideways: %v", err)
	}
}

func haloSelectionExact(t *testing.T, method, order string, rounds int) {
	{
		for _, g := range []struct {
			dims    []int
			periods []bool
		}{
			{[]int{2, 3}, []bool{true, false}},
			{[]int{2, 1, 2}, []bool{true, true, false}},
		} {
			tc := haloCase{dims: g.dims, periods: g.periods, extents: haloExtents[len(g.dims)], width: 2, comps: 3, elem: "float64", impl: method}
			t.Run(order+"/"+tc.String(), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				if err := runHalo(ctx, tc, rounds, haloSamples(2), haloState(HaloStateOff), func(c *Config) { c.HaloOrder = order }); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// haloSelectJob runs rounds exchanges of two Halos of the same shape on a
// 2×2 periodic Cart, alternately, and returns rank 0's view of the
// selection after each round. With timed set, a Timer times both
// exchanges of a round together, plus sleep(round) on rank 0.
// With timed, a HaloTimer times each round; sleep, if not nil, tells how
// long rank 0 sleeps in a round's timed region, given the median of the
// earlier rounds' lengths on rank 0 (0 before the first).
func haloSelectJob(t *testing.T, method string, rounds int, timed bool, sleep func(round int, typical time.Duration) time.Duration, opts ...Option) []HaloSelection {
	t.Helper()
	var views []HaloSelection
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := Local(4, func(c *Comm) error {
		cart, err := c.Cart([]int{2, 2}, []bool{true, true})
		if err != nil {
			return err
		}
		ext := []int{6, 5}
		a := make([]float64, 10*9)
		b := make([]float64, 10*9)
		ha, err := NewHalo(cart, a, ext, 2, 1, WithHaloSelect(method))
		if err != nil {
			return err
		}
		hb, err := NewHalo(cart, b, ext, 2, 1, WithHaloSelect(method))
		if err != nil {
			return err
		}
		var timer *HaloTimer
		if timed {
			if timer, err = NewHaloTimer(ha, hb); err != nil {
				return err
			}
		}
		var lengths []time.Duration // rank 0's rounds so far
		for round := range rounds {
			t0 := time.Now()
			if timer != nil {
				timer.Start()
			}
			if err := ha.Exchange(ctx); err != nil {
				return err
			}
			if a, b := ha.Selection(), hb.Selection(); a.Impl != b.Impl || a.Calls != b.Calls {
				return fmt.Errorf("round %d: Halos of one shape disagree: %+v and %+v", round, a, b)
			}
			if err := hb.Exchange(ctx); err != nil {
				return err
			}
			if timer != nil {
				if c.Rank() == 0 && sleep != nil {
					var typical time.Duration
					if len(lengths) > 0 {
						sorted := slices.Clone(lengths)
						slices.Sort(sorted)
						typical = sorted[len(sorted)/2]
					}
					time.Sleep(sleep(round, typical))
				}
				if err := timer.Stop(ctx); err != nil {
					return err
				}
			}
			if c.Rank() == 0 {
				views = append(views, ha.Selection())
				lengths = append(lengths, time.Since(t0))
			}
		}
		return nil
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return views
}

func TestHaloSelectionShared(t *testing.T) {
	n := len(HaloImpls())
	for _, tc := range []struct {
		name      string
		timed     bool
		decidedBy int // round by which the selection has ended
	}{
		// Each Halo's exchange is one measurement of the shared selection:
		// two per round.
		{"exchanges", false, n},
		// A Timer region is one measurement, whatever it holds.
		{"timer", true, 2 * n},
	} {
		t.Run(tc.name, func(t *testing.T) {
			views := haloSelectJob(t, HaloSelectBrute, 2*n+4, tc.timed, nil, haloSamples(2), haloState(HaloStateOff))
			last := views[len(views)-1]
			if last.Exploring || last.Selections != 1 || last.Calls != 2*n {
				t.Fatalf("after %d rounds: %+v; want one selection of %d calls", len(views), last, 2*n)
			}
			if v := views[tc.decidedBy-1]; v.Exploring {
				t.Fatalf("still exploring after round %d: %+v", tc.decidedBy, v)
			}
			if tc.decidedBy > 1 {
				if v := views[tc.decidedBy-2]; !v.Exploring {
					t.Fatalf("decided early, at round %d: %+v", tc.decidedBy-1, v)
				}
			}
			if !slices.Contains(HaloImpls(), last.Impl) || len(last.Explain) == 0 {
				t.Fatalf("winner %q, explanation %q", last.Impl, last.Explain)
			}
		})
	}
}

// TestHaloSelectionPersisted: a second job on the same decisions file
// starts on the first job's winner, measuring nothing.
func TestHaloSelectionPersisted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "halo.json")
	n := len(HaloImpls())
	first := haloSelectJob(t, HaloSelectBrute, n+2, false, nil, haloSamples(2), haloState(path))
	won := first[len(first)-1]
	if won.Exploring {
		t.Fatalf("first job did not decide: %+v", won)
	}
	second := haloSelectJob(t, HaloSelectBrute, 3, false, nil, haloSamples(2), haloState(path))
	for i, v := range second {
		if v.Exploring || v.Impl != won.Impl || v.Calls != 0 || v.Selections != 1 {
			t.Fatalf("second job, round %d: %+v; want %s at once, with no exploration", i, v, won.Impl)
		}
	}
	if !strings.Contains(strings.Join(second[0].Explain, "\n"), "resumed on "+won.Impl) {
		t.Fatalf("explanation %q does not say it resumed", second[0].Explain)
	}
	m, err := tune.LoadDecisions(path, (&Config{}).Platform().ID)
	if err != nil || len(m) != 1 {
		t.Fatalf("decisions file: %v, %v", m, err)
	}
	// A hypothesis selection is another key's business: it explores.
	third := haloSelectJob(t, HaloSelectHypothesis, 1, false, nil, haloSamples(2), haloState(path))
	if !third[0].Exploring {
		t.Fatalf("hypothesis job on a brute decision: %+v; want it to explore", third[0])
	}
}

// TestHaloSelectionDrift: rank 0's region slows down mid-run; the watch
// sees it and the selection starts again. The slowdown is three times the
// rounds' typical length so far, not a fixed time: on a loaded machine
// exchanges of goroutine ranks took 10–30 ms, and a fixed 8 ms more did
// not reach the watch's factor of 1.5.
func TestHaloSelectionDrift(t *testing.T) {
	const change = 60
	var slow time.Duration // fixed at the change
	sleep := func(round int, typical time.Duration) time.Duration {
		if round < change {
			return 2 * time.Millisecond
		}
		if slow == 0 {
			slow = 3 * typical
		}
		return slow
	}
	n := len(HaloImpls())
	rounds := change + 3*tune.DefaultWatchWindow + n
	views := haloSelectJob(t, HaloSelectBrute, rounds, true, sleep, haloSamples(1), haloState(HaloStateOff))
	if v := views[change-1]; v.Selections != 1 || v.Exploring {
		t.Fatalf("before the change: %+v; want one selection over", v)
	}
	resumed := -1
	for i := change; i < len(views); i++ {
		if views[i].Exploring {
			resumed = i
			break
		}
	}
	if lim := change + (tune.DefaultDriftWindows+1)*tune.DefaultWatchWindow; resumed < 0 || resumed > lim {
		t.Fatalf("re-selection began at round %d, want between %d and %d\n%s", resumed, change, lim, strings.Join(views[len(views)-1].Explain, "\n"))
	}
	if last := views[len(views)-1]; last.Exploring || last.Selections != 2 {
		t.Fatalf("at the end: %+v; want the second selection over", last)
	}
}
