package comm

import (
	"testing"
	"time"
)

// TestWindowFigure: a window's figure is the mean of its timed calls, each
// counted at most clipRatio times the median of the first windowTimes.
func TestWindowFigure(t *testing.T) {
	us := time.Microsecond
	for _, tc := range []struct {
		name  string
		times []time.Duration
		mean  time.Duration
	}{
		{"one call", []time.Duration{7 * us}, 7 * us},
		{"a stall is clipped", []time.Duration{10 * us, 10 * us, 500 * us, 10 * us, 10 * us}, (4*10 + 80) * us / 5},
		{"a tail within the clip counts", []time.Duration{10 * us, 10 * us, 10 * us, 70 * us}, 25 * us},
		{"calls beyond the kept ones count", append(repeat(5*us, windowTimes), 5*us, 15*us, 1000*us), (5*windowTimes + 5 + 15 + 40) * us / (windowTimes + 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s selection
			for _, d := range tc.times {
				s.timed(d)
			}
			f := s.figure()
			if f.mean != tc.mean || f.calls != len(tc.times) {
				t.Errorf("figure %+v, want mean %v over %d calls", f, tc.mean, len(tc.times))
			}
		})
	}
	var empty selection
	if f := empty.figure(); f.calls != 0 || f.mean != 0 {
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
