package bench

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/commtune/commtune"
)

func TestSummaryOf(t *testing.T) {
	// 99 calls of 1 µs and one of 100 µs: the median and p90 do not see
	// the slow call; the mean, p99 and maximum do.
	tail := append(slices.Repeat([]float64{1000}, 99), 100000)
	tests := []struct {
		name string
		ns   []float64
		want Summary
	}{
		{"none", nil, Summary{}},
		{"one", []float64{7000}, Summary{Calls: 1, Mean: 7, P50: 7, P90: 7, P99: 7, Max: 7}},
		{"four, unsorted", []float64{3000, 1000, 4000, 2000}, Summary{Calls: 4, Mean: 2.5, P50: 2.5, P90: 3.7, P99: 3.97, Max: 4}},
		{"a tail of 1%", tail, Summary{Calls: 100, Mean: 1.99, P50: 1, P90: 1, P99: 1.99, Max: 100}},
		{"slow call first", append([]float64{100000}, tail[:99]...), Summary{Calls: 100, Mean: 1.99, P50: 1, P90: 1, P99: 1.99, Max: 100}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.ns)
			got := SummaryOf(tc.ns)
			if got.Calls != tc.want.Calls || !near(got.Mean, tc.want.Mean) || !near(got.P50, tc.want.P50) ||
				!near(got.P90, tc.want.P90) || !near(got.P99, tc.want.P99) || !near(got.Max, tc.want.Max) {
				t.Errorf("SummaryOf(%v) = %+v, want %+v", tc.ns, got, tc.want)
			}
			if !slices.Equal(in, tc.ns) {
				t.Errorf("SummaryOf changed its argument: %v, was %v", tc.ns, in)
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

// TestSummaryRoundTrip: a result's Summary gives back the summary it was
// made of, for the collective and the ping-pong results alike.
func TestSummaryRoundTrip(t *testing.T) {
	s := Summary{Calls: 5, Mean: 2, P50: 1, P90: 3, P99: 4, Max: 5}
	if got := collResult("a", 8, s).Summary(); got != s {
		t.Errorf("collective: %+v, want %+v", got, s)
	}
	// result halves round trips (ns) into one-way times (µs).
	r := result(1000, []time.Duration{2000, 2000, 4000, 2000})
	want := Summary{Calls: 4, Mean: 1.25, P50: 1, P90: 1.7, P99: 1.97, Max: 2}
	if got := r.Summary(); got.Calls != want.Calls || !near(got.Mean, want.Mean) || !near(got.P50, want.P50) ||
		!near(got.P90, want.P90) || !near(got.P99, want.P99) || !near(got.Max, want.Max) {
		t.Errorf("ping-pong: %+v, want %+v", got, want)
	}
	if r.LatencyUS != 1 || r.BandwidthMBps != 1000 || !near(r.MeanMBps(), 800) {
		t.Errorf("ping-pong result %+v: bandwidth at the median %v, at the mean %v", r, r.BandwidthMBps, r.MeanMBps())
	}
}

// TestSlowestPerCall: rank 0 gets, call by call, the largest of the
// ranks' times, whichever rank took it; the others get nothing.
func TestSlowestPerCall(t *testing.T) {
	// Each rank's time of each call is distinct, and the slowest rank
	// changes from call to call.
	at := func(rank, call int) time.Duration {
		return time.Duration(1000*(1+(call*7+rank*5)%11) + 10*rank + call)
	}
	tests := []struct{ ranks, calls int }{{1, 4}, {2, 7}, {3, 12}, {4, 30}}
	for _, tc := range tests {
		want := make([]float64, tc.calls)
		for k := range want {
			for r := 0; r < tc.ranks; r++ {
				want[k] = max(want[k], float64(at(r, k)))
			}
		}
		var got []float64
		err := commtune.Local(tc.ranks, func(c *commtune.Comm) error {
			times := make([]time.Duration, tc.calls)
			for k := range times {
				times[k] = at(c.Rank(), k)
			}
			s, err := slowestPerCall(context.Background(), c, times)
			if c.Rank() == 0 {
				got = s
			} else if s != nil {
				t.Errorf("rank %d got %v", c.Rank(), s)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d ranks: slowest %v, want %v", tc.ranks, got, want)
		}
	}
}

func TestParseTiming(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Timing
		ok   bool
	}{{"", BackToBack, true}, {"back-to-back", BackToBack, true}, {"barrier", BarrierEach, true}, {"median", "", false}} {
		got, err := ParseTiming(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseTiming(%q) = %q, %v", tc.in, got, err)
		}
	}
}

// TestCollTimings counts the calls each timing makes of each algorithm,
// in order. Back to back: each algorithm's warm-up (whole blocks of
// WarmupCalls) from the given one, then blocks taken in turn, the order
// rotating, each with blockWarmup untimed calls first (none for a single
// algorithm, whose timed calls run as one block). With a barrier each: two
// warm-ups per algorithm, then blocks of a fifth taken in turn.
func TestCollTimings(t *testing.T) {
	w := slices.Repeat[[]int]
	turn := func(alg int) []int { return w([]int{alg}, blockWarmup+1) }
	tests := []struct {
		name              string
		barrier           bool
		algos, first, its int
		want              []int // the algorithm of each call after the warm-ups (one block of WarmupCalls each)
		timed             int   // times per algorithm
	}{
		{"back to back", false, 2, 1, 3, slices.Concat(w([]int{1}, WarmupCalls), w([]int{0}, WarmupCalls),
			turn(1), turn(0), turn(0), turn(1), turn(1), turn(0)), 3},
		{"back to back, one algorithm", false, 1, 0, 3, w([]int{0}, WarmupCalls+3), 3},
		{"barrier each", true, 2, 0, 10, []int{0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1}, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls []int
			var times [][]time.Duration
			err := commtune.Local(2, func(c *commtune.Comm) error {
				var mine []int
				run := func(i int) error { mine = append(mine, i); return nil }
				var ts [][]time.Duration
				var err error
				if tc.barrier {
					ts, err = collBarrierEach(context.Background(), c, tc.algos, tc.its, run)
				} else {
					ts, err = collBackToBack(context.Background(), c, tc.algos, tc.first, tc.its, run)
				}
				if c.Rank() == 0 {
					calls, times = mine, ts
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if !tc.barrier {
				calls = oneWarmupBlock(t, calls, tc.algos)
			}
			if !slices.Equal(calls, tc.want) {
				t.Errorf("calls %v, want %v", calls, tc.want)
			}
			for i, ts := range times {
				if len(ts) != tc.timed {
					t.Errorf("algorithm %d: %d times, want %d", i, len(ts), tc.timed)
				}
			}
		})
	}
}

// oneWarmupBlock checks that the calls begin with each of algos
// algorithms' warm-up, whole blocks of WarmupCalls (at least one), and
// returns the calls with one warm-up block per algorithm.
func oneWarmupBlock(t *testing.T, calls []int, algos int) []int {
	t.Helper()
	var out []int
	for range algos {
		if len(calls) == 0 {
			t.Errorf("calls end before every algorithm warmed up")
			break
		}
		n := 1
		for n < len(calls) && calls[n] == calls[0] {
			n++
		}
		// What follows a warm-up is another algorithm's, or (one
		// algorithm) fewer timed calls than a block.
		warm := n - n%WarmupCalls
		if warm < WarmupCalls {
			t.Errorf("algorithm %d: %d warm-up calls, want whole blocks of %d", calls[0], n, WarmupCalls)
		}
		out = append(out, slices.Repeat(calls[:1], WarmupCalls)...)
		calls = calls[warm:]
	}
	return append(out, calls...)
}

// TestWarmUp checks that every rank makes the same warm-up calls, in
// blocks of WarmupCalls, and that rank 0 spends at least WarmupTime in
// them: fast calls take several blocks, slow ones one.
func TestWarmUp(t *testing.T) {
	for _, tc := range []struct {
		name     string
		call     time.Duration
		oneBlock bool
	}{{"fast calls", 0, false}, {"slow calls", WarmupTime / WarmupCalls, true}} {
		t.Run(tc.name, func(t *testing.T) {
			calls := make([]int, 3)
			var spent time.Duration
			err := commtune.Local(3, func(c *commtune.Comm) error {
				start := time.Now()
				err := warmUp(context.Background(), c, func() error {
					calls[c.Rank()]++
					time.Sleep(tc.call)
					return nil
				})
				if c.Rank() == 0 {
					spent = time.Since(start)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if calls[1] != calls[0] || calls[2] != calls[0] || calls[0]%WarmupCalls != 0 {
				t.Errorf("calls per rank %v, want equal whole blocks of %d", calls, WarmupCalls)
			}
			if spent < WarmupTime {
				t.Errorf("rank 0 warmed up for %v, want at least %v", spent, WarmupTime)
			}
			// Fast calls usually take several blocks, but a loaded
			// machine may spend WarmupTime in the first: only slow
			// calls have a block count to hold.
			if tc.oneBlock && calls[0] != WarmupCalls {
				t.Errorf("%d calls, want one block of %d", calls[0], WarmupCalls)
			}
		})
	}
}

// collLocal runs Coll with cfg on n goroutine ranks and returns rank 0's
// results.
func collLocal(t *testing.T, n int, cfg CollConfig) []CollResult {
	t.Helper()
	var res []CollResult
	err := commtune.Local(n, func(c *commtune.Comm) error {
		r, err := Coll(context.Background(), c, cfg)
		if c.Rank() == 0 {
			res = r
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestCollMarksTableChoice checks that the results mark what the table
// runs, whether or not auto is listed, and nothing else: on goroutine
// ranks, the direct family.
func TestCollMarksTableChoice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		algos []string
		want  []string // the algorithm of each result, its mark at the end
	}{
		{"auto listed", []string{Auto, "allreduce/ring"}, []string{"allreduce/node-segment+", "allreduce/ring"}},
		{"auto not listed", []string{"allreduce/ring", "allreduce/node-segment"}, []string{"allreduce/ring", "allreduce/node-segment+"}},
		{"choice not listed", []string{"allreduce/ring", "allreduce/recursive-doubling"}, []string{"allreduce/ring", "allreduce/recursive-doubling"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := collLocal(t, 2, CollConfig{Op: "allreduce", Algorithms: tc.algos, Sizes: []int{64}, Iters: 5})
			var got []string
			for _, r := range res {
				name := r.Algo
				if r.Auto {
					name += "+"
				}
				got = append(got, name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("results %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCollReport runs the benchmark on goroutine ranks in both timings
// and checks each result's shape: every call counted, the figures in a
// distribution's order.
func TestCollReport(t *testing.T) {
	for _, timing := range Timings {
		t.Run(string(timing), func(t *testing.T) {
			res := collLocal(t, 3, CollConfig{Op: "allreduce", Algorithms: []string{Auto, "allreduce/ring"}, Sizes: []int{8, 1024}, Iters: 20, Timing: timing})
			if len(res) != 4 {
				t.Fatalf("%d results: %+v", len(res), res)
			}
			for _, r := range res {
				s := r.Summary()
				if s.Calls != 20 || !(s.P50 > 0 && s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.Max && s.Mean > 0 && s.Mean <= s.Max) {
					t.Errorf("result %+v", r)
				}
			}
		})
	}
}
