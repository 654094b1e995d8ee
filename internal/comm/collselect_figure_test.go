package comm

import (
	"testing"
	"time"
)

// TestWindowFigure: a window's figure is the mean of its timed calls but
// the longest of every trimEvery, at most trimMost of them.
func TestWindowFigure(t *testing.T) {
	us := time.Microsecond
	stalls := func(n int) []time.Duration { // n calls of 10 µs, then 3 of 1 ms
		return append(repeat(10*us, n), time.Millisecond, time.Millisecond, time.Millisecond)
	}
	for _, tc := range []struct {
		name  string
		times []time.Duration
		mean  time.Duration
	}{
		{"one call", []time.Duration{7 * us}, 7 * us},
		{"a short window counts every call", []time.Duration{10 * us, 10 * us, 500 * us, 10 * us}, 530 * us / 4},
		{"a tail of the algorithm counts", append(repeat(10*us, 57), repeat(100*us, 7)...), (570*us + 600*us) / 63},
		{"one of 64 left out", stalls(61), (610*us + 2*time.Millisecond) / 63},
		{"three of 192 left out", stalls(189), 10 * us},
		{"at most trimMost left out", append(repeat(10*us, 10*trimEvery-12), repeat(time.Millisecond, 12)...), (time.Duration(10*trimEvery-12)*10*us + 4*time.Millisecond) / (10*trimEvery - trimMost)},
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
