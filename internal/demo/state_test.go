package demo

import (
	"testing"

	"github.com/commtune/commtune/internal/profile"
)

func TestInState(t *testing.T) {
	const ref = 2200 // 32 KiB by iovec: 2.2 µs
	for _, tc := range []struct {
		name            string
		tuned, defaults float64
		want            bool
	}{
		{"both as sampled", 2300, 2100, true},
		{"within 1.5 times either way", 3290, 1470, true},
		{"the host slowed one run", 15700, 2250, false},
		{"both runs in it", 15700, 16600, false},
		{"faster than sampled: the profile was taken in it", 1400, 1300, false},
		{"no probe", 0, 2200, false},
	} {
		if got := InState(tc.tuned, tc.defaults, ref); got != tc.want {
			t.Errorf("%s: InState(%v, %v, %v) = %v, want %v", tc.name, tc.tuned, tc.defaults, ref, got, tc.want)
		}
	}
}

func TestReference(t *testing.T) {
	p := &profile.Profile{Transports: map[string]*profile.Transport{"shm": {Methods: map[string]profile.Curve{
		ProbePath: {
			{Size: 16 << 10, Median: 1500, P25: 1500, P75: 1500, Reps: 1},
			{Size: 64 << 10, Median: 4500, P25: 4500, P75: 4500, Reps: 1},
		},
	}}}}
	// 32K lies a third of the way from 16K to 64K: 1500 + 3000/3.
	if got, ok := Reference(p, "shm"); !ok || got != 2500 {
		t.Errorf("Reference = %v, %v; want 2500, true", got, ok)
	}
	if _, ok := Reference(p, "tcp"); ok {
		t.Error("a reference from a transport without samples")
	}
}
