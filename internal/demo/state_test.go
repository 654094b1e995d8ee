package demo

import (
	"testing"

	"github.com/commtune/commtune/internal/profile"
)

func TestInState(t *testing.T) {
	const ref = 200e3 // a 4 MiB copy in cache: 200 µs
	for _, tc := range []struct {
		name            string
		tuned, defaults float64
		want            bool
	}{
		{"both as sampled", 210e3, 190e3, true},
		{"within 1.5 times either way", 299e3, 134e3, true},
		{"a neighbour took the cache during one run", 1200e3, 205e3, false},
		{"both runs in it", 900e3, 1400e3, false},
		{"faster than sampled: the profile was taken in it", 120e3, 110e3, false},
		{"no probe", 0, 200e3, false},
	} {
		if got := InState(tc.tuned, tc.defaults, ref); got != tc.want {
			t.Errorf("%s: InState(%v, %v, %v) = %v, want %v", tc.name, tc.tuned, tc.defaults, ref, got, tc.want)
		}
	}
}

func TestReference(t *testing.T) {
	p := &profile.Profile{Host: map[string]profile.Curve{profile.Memcpy: {
		{Size: 2 << 20, Median: 100e3, P25: 100e3, P75: 100e3, Reps: 1},
		{Size: 8 << 20, Median: 400e3, P25: 400e3, P75: 400e3, Reps: 1},
	}}}
	if got, ok := Reference(p); !ok || got != 200e3 {
		t.Errorf("Reference = %v, %v; want 200000 (4M between 2M and 8M), true", got, ok)
	}
	if _, ok := Reference(&profile.Profile{}); ok {
		t.Error("a reference from a profile without a memcpy curve")
	}
}
