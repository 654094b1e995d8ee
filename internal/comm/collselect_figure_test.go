package comm

import (
	"testing"
	"time"
)

// TestWindowFigure: a window's figure is the median of its timed calls
// (of the first windowTimes), and a window whose longest call is both
// stallRatio times the median and stallMin more held a stall.
func TestWindowFigure(t *testing.T) {
	us := time.Microsecond
	for _, tc := range []struct {
		name     string
		times    []time.Duration
		median   time.Duration
		longest  time.Duration
		stalled  bool
		moreThan int // calls beyond windowTimes
	}{
		{"one call", []time.Duration{7 * us}, 7 * us, 7 * us, false, 0},
		{"odd call out", []time.Duration{10 * us, 11 * us, 500 * us, 9 * us, 10 * us}, 10 * us, 500 * us, true, 0},
		{"long but within ratio", []time.Duration{100 * us, 120 * us, 390 * us}, 120 * us, 390 * us, false, 0},
		{"ratio but small", []time.Duration{2 * us, 2 * us, 40 * us}, 2 * us, 40 * us, false, 0},
		{"beyond the kept calls", repeat(5*us, windowTimes), 5 * us, 5 * us, false, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s selection
			for _, d := range tc.times {
				s.times[s.calls] = d
				s.calls++
			}
			s.calls += tc.moreThan
			f := s.figure()
			if f.median != tc.median || f.longest != tc.longest || f.calls != len(tc.times)+tc.moreThan {
				t.Errorf("figure %+v, want median %v, longest %v, %d calls", f, tc.median, tc.longest, len(tc.times)+tc.moreThan)
			}
			if f.stalled() != tc.stalled {
				t.Errorf("stalled %t, want %t", f.stalled(), tc.stalled)
			}
		})
	}
	var empty selection
	if f := empty.figure(); f.calls != 0 || f.median != 0 {
		t.Errorf("no calls: %+v", f)
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}
