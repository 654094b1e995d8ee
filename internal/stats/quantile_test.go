package stats

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100 … 1, unsorted
	}
	tests := []struct {
		name string
		xs   []float64
		q    float64
		want float64
	}{
		{"empty", nil, 0.5, 0},
		{"one element", []float64{7}, 0.99, 7},
		{"one element, q 0", []float64{7}, 0, 7},
		{"odd count, median", []float64{3, 1, 2}, 0.5, 2},
		{"even count, median is the mean of the middle two", []float64{4, 1, 3, 2}, 0.5, 2.5},
		{"minimum", []float64{4, 1, 3, 2}, 0, 1},
		{"maximum", []float64{4, 1, 3, 2}, 1, 4},
		{"quartile between ranks", []float64{10, 11, 12, 12, 13, 14}, 0.25, 11.25},
		{"third quartile between ranks", []float64{10, 11, 12, 12, 13, 14}, 0.75, 12.75},
		{"quartile on a rank", []float64{50, 10, 40, 20, 30}, 0.25, 20},
		{"hundred values, median", hundred, 0.5, 50.5},
		{"hundred values, p90", hundred, 0.9, 90.1},
		{"hundred values, p99", hundred, 0.99, 99.01},
		{"hundred values, p100", hundred, 1, 100},
		{"q below 0 is the minimum", []float64{2, 1}, -1, 1},
		{"q above 1 is the maximum", []float64{2, 1}, 2, 2},
		{"NaN q is the minimum", []float64{2, 1}, math.NaN(), 1},
		{"equal neighbours", []float64{5, 5, 5, 5}, 0.3, 5},
		{"infinite value, exactly on its neighbour's rank", []float64{1, 2, math.Inf(1)}, 0.5, 2},
		{"negative values", []float64{-3, -1, -2, -4}, 0.5, -2.5},
		{"no overflow in the mean of the middle two", []float64{math.MaxFloat64, math.MaxFloat64 / 2}, 0.5, 0.75 * math.MaxFloat64},
	}
	for _, tc := range tests {
		got := Quantile(tc.xs, tc.q)
		if math.Abs(got-tc.want) > 1e-9*math.Abs(tc.want) {
			t.Errorf("%s: Quantile(%v, %v) = %v, want %v", tc.name, tc.xs, tc.q, got, tc.want)
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []time.Duration
		want float64
	}{
		{"empty", nil, 0},
		{"one element", []time.Duration{5}, 5},
		{"odd count, unsorted", []time.Duration{9, 1, 5}, 5},
		{"even count, unsorted", []time.Duration{4, 1, 3, 2}, 2.5},
		{"even count, in nanoseconds", []time.Duration{time.Microsecond, 2 * time.Microsecond}, 1500},
	}
	for _, tc := range tests {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("%s: Median(%v) = %v, want %v", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestMedianExact: the median of an even count is the mean of the middle
// two to the last bit, as the callers' own (a+b)/2 was, so values compared
// for equality in their tests do not move.
func TestMedianExact(t *testing.T) {
	for _, tc := range [][2]float64{{0.1, 0.2}, {1.1, 1.3}, {1e-300, 3e-300}, {1 / 3.0, 2 / 3.0}, {12.34, 56.78}} {
		if got, want := Median(tc[:]), (tc[0]+tc[1])/2; got != want {
			t.Errorf("Median(%v) = %v, want %v", tc, got, want)
		}
	}
}

func TestQuantiles(t *testing.T) {
	in := []int{50, 10, 40, 20, 30}
	got := Quantiles(in, 0.25, 0.5, 0.75)
	if want := []float64{20, 30, 40}; !slices.Equal(got, want) {
		t.Errorf("Quantiles(%v, ¼, ½, ¾) = %v, want %v", in, got, want)
	}
	if got := Quantiles([]int(nil), 0.5, 0.9); !slices.Equal(got, []float64{0, 0}) {
		t.Errorf("Quantiles of nothing = %v, want zeros", got)
	}
	if got := Quantiles(in); len(got) != 0 {
		t.Errorf("Quantiles with no q = %v, want none", got)
	}
}

// TestDoesNotModifyInput: callers keep their samples in the order taken
// (a ping-pong's round trips, the tuner's window history).
func TestDoesNotModifyInput(t *testing.T) {
	f := []float64{3, 1, 2, 5, 4}
	d := []time.Duration{30, 10, 20, 40}
	fc, dc := slices.Clone(f), slices.Clone(d)
	Quantile(f, 0.9)
	Median(f)
	Quantiles(f, 0.25, 0.75)
	Median(d)
	Quantiles(d, 0.5, 0.99)
	if !slices.Equal(f, fc) || !slices.Equal(d, dc) {
		t.Errorf("input modified: %v (was %v), %v (was %v)", f, fc, d, dc)
	}
}

// TestMonotone: a higher q never gives a lower quantile, so a sample's
// quartiles always bracket its median (profile.Validate checks that).
func TestMonotone(t *testing.T) {
	xs := []float64{0.3, 7, 7, 1e6, -2, 0, 13.5, 13.5, 99}
	prev := math.Inf(-1)
	for q := 0.0; q <= 1; q += 1.0 / 64 {
		got := Quantile(xs, q)
		if got < prev {
			t.Fatalf("Quantile(%v) = %v below Quantile at the q before, %v", q, got, prev)
		}
		prev = got
	}
}
