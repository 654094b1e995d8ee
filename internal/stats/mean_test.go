package stats

import (
	"math"
	"testing"
	"time"
)

func TestMean(t *testing.T) {
	tail := make([]float64, 100)
	for i := range tail {
		tail[i] = 1
	}
	tail[42] = 100
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"one", []float64{7}, 7},
		{"unsorted", []float64{4, 1, 3, 2}, 2.5},
		{"a tail of one in a hundred", tail, 1.99},
		{"negative values", []float64{-3, 1}, -1},
	}
	for _, tc := range tests {
		if got := Mean(tc.xs); math.Abs(got-tc.want) > 1e-12*max(1, math.Abs(tc.want)) {
			t.Errorf("%s: Mean(%v) = %v, want %v", tc.name, tc.xs, got, tc.want)
		}
	}
	// Durations summing past the int64 range.
	big := []time.Duration{math.MaxInt64 - 1, math.MaxInt64 - 1}
	if got := Mean(big); math.Abs(got-float64(math.MaxInt64-1)) > 1e3 {
		t.Errorf("Mean of two large durations = %v", got)
	}
}
