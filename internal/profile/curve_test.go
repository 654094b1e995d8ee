package profile

import (
	"math"
	"testing"
)

// curve samples f at sizes with quartiles 1% either side of the median and
// 100 repetitions: tight enough that the 2% noise rule governs.
func curve(sizes []int64, f func(x float64) float64) Curve {
	c := make(Curve, len(sizes))
	for i, s := range sizes {
		m := f(float64(s))
		c[i] = Sample{Size: s, Median: m, P25: 0.99 * m, P75: 1.01 * m, Reps: 100}
	}
	return c
}

// pow2 returns the powers of two from lo to hi.
func pow2(lo, hi int64) []int64 {
	var out []int64
	for s := lo; s <= hi; s *= 2 {
		out = append(out, s)
	}
	return out
}

// logSizes returns the powers of two from lo to hi and their midpoints
// (3·2^(k−1)), as the sampler uses.
func logSizes(lo, hi int64) []int64 {
	var out []int64
	for s := lo; s <= hi; s *= 2 {
		out = append(out, s)
		if mid := s + s/2; mid > s && mid < 2*s && mid <= hi {
			out = append(out, mid)
		}
	}
	return out
}

func TestCurveAt(t *testing.T) {
	c := Curve{
		{Size: 1, Median: 100, P25: 90, P75: 110, Reps: 4},
		{Size: 4, Median: 160, P25: 150, P75: 190, Reps: 4},
		{Size: 16, Median: 400, P25: 380, P75: 420, Reps: 4},
	}
	tests := []struct {
		size, want float64
	}{
		{0.5, 100}, // below the first sample: the fixed cost holds
		{1, 100},
		{2, 120}, // 100 + 60·(1/3)
		{4, 160},
		{10, 280}, // 160 + 240·(6/12)
		{16, 400},
		{32, 720}, // the last slope, 20 ns/B, continues
	}
	for _, tc := range tests {
		if got := c.At(tc.size); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("At(%v) = %v, want %v", tc.size, got, tc.want)
		}
	}
	// Standard error: 0.93 × IQR / √reps; at 4: 0.93 × 40 / 2.
	if got := c.StdErr(4); math.Abs(got-18.6) > 1e-9 {
		t.Errorf("StdErr(4) = %v, want 18.6", got)
	}
	if got := (Curve{}).At(3); !math.IsNaN(got) {
		t.Errorf("empty curve At = %v, want NaN", got)
	}
}

func TestPredict(t *testing.T) {
	p := &Profile{Transports: map[string]*Transport{"tcp": {Methods: map[string]Curve{
		Rendezvous: {{Size: 1024, Median: 10000, P25: 9000, P75: 11000, Reps: 10}, {Size: 2048, Median: 12000, P25: 11000, P75: 13000, Reps: 10}},
	}}}}
	tests := []struct {
		transport, method string
		size              int64
		want              int64 // ns
		err               bool
	}{
		{"tcp", Rendezvous, 1536, 11000, false},
		{"tcp", Rendezvous, 4096, 16000, false}, // 2 ns/B beyond the last sample
		{"tcp", EagerCopy, 1536, 0, true},
		{"shm", Rendezvous, 1536, 0, true},
	}
	for _, tc := range tests {
		got, err := p.Predict(tc.transport, tc.method, tc.size)
		if (err != nil) != tc.err || got.Nanoseconds() != tc.want {
			t.Errorf("Predict(%s, %s, %d) = %v, %v; want %d ns (error %v)", tc.transport, tc.method, tc.size, got, err, tc.want, tc.err)
		}
	}
}
