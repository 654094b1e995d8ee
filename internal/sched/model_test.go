package sched

import (
	"math"
	"strings"
	"sync"
	"testing"
)

// linearModel samples a rail of latency latNs and bandwidth mbps (MB/s, so
// mbps/1000 bytes per ns) at the powers of two up to 1 GiB.
func linearModel(t testing.TB, latNs, mbps float64) *RailModel {
	t.Helper()
	var sizes []int64
	var nanos []float64
	for s := int64(1); s <= 1<<30; s *= 2 {
		sizes = append(sizes, s)
		nanos = append(nanos, latNs+float64(s)/(mbps/1000))
	}
	m, err := NewRailModel(sizes, nanos)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustModel(t testing.TB, sizes []int64, nanos []float64) *RailModel {
	t.Helper()
	m, err := NewRailModel(sizes, nanos)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func near(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b)) }

// TestRailModelPredict: linear interpolation between samples, the first
// sample's time below it, the last segment's slope beyond the last sample
// (the last sample's average time per byte if that segment is flat), and
// the monotone fix-up of noisy samples.
func TestRailModelPredict(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int64
		nanos []float64
		at    map[int]float64
	}{
		{"interpolation", []int64{100, 200, 400}, []float64{1000, 2000, 2500},
			map[int]float64{-5: 0, 0: 0, 1: 1000, 50: 1000, 100: 1000, 150: 1500, 200: 2000, 300: 2250, 399: 2497.5, 400: 2500}},
		{"extrapolation with the last slope", []int64{100, 200, 400}, []float64{1000, 2000, 2500},
			map[int]float64{600: 3000, 4400: 12500}},
		{"flat last segment: average bandwidth", []int64{100, 200}, []float64{1000, 1000},
			map[int]float64{200: 1000, 400: 2000}},
		{"one sample", []int64{1000}, []float64{500},
			map[int]float64{10: 500, 1000: 500, 3000: 1500}},
		// 10, 5, 20, 15 becomes 5, 5, 15, 15: a running minimum from the
		// largest size down; flat at the end, the tail is 15/8 ns a byte.
		{"non-monotone samples become a running minimum from the right", []int64{1, 2, 4, 8}, []float64{10, 5, 20, 15},
			map[int]float64{1: 5, 2: 5, 3: 10, 4: 15, 6: 15, 8: 15, 16: 30}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustModel(t, tc.sizes, tc.nanos)
			for n, want := range tc.at {
				if got := m.Predict(n); !near(got, want, 1e-12) {
					t.Errorf("Predict(%d) = %v, want %v", n, got, want)
				}
			}
		})
	}
}

// TestRailModelPredictReference: Predict agrees with a plain linear
// interpolation, on curves sampled at powers of two (whose segment is
// found from the size's bit length) and at other sizes.
func TestRailModelPredictReference(t *testing.T) {
	ref := func(sizes []int64, nanos []float64, n int) float64 {
		x := float64(n)
		if x <= float64(sizes[0]) {
			return nanos[0]
		}
		last := len(sizes) - 1
		for i := 0; i < last; i++ {
			s0, s1 := float64(sizes[i]), float64(sizes[i+1])
			if x < s1 {
				return nanos[i] + (x-s0)*(nanos[i+1]-nanos[i])/(s1-s0)
			}
		}
		return nanos[last] + (x-float64(sizes[last]))*(nanos[last]-nanos[last-1])/float64(sizes[last]-sizes[last-1])
	}
	seed := uint64(1)
	rnd := func() float64 { // deterministic, in [0, 1)
		seed = seed*6364136223846793005 + 1442695040888963407
		return float64(seed>>11) / (1 << 53)
	}
	for _, pow2 := range []bool{true, false} {
		var sizes []int64
		var nanos []float64
		tm := 1000.0
		for s := int64(4); s <= 1<<24; s *= 2 {
			if !pow2 {
				s += int64(rnd() * float64(s) / 2)
			}
			sizes = append(sizes, s)
			tm += rnd() * float64(s)
			nanos = append(nanos, tm)
		}
		m := mustModel(t, sizes, nanos)
		if (m.pow2 > 0) != pow2 {
			t.Fatalf("pow2 %v: detected %d", pow2, m.pow2)
		}
		for _, n := range []int{1, 3, 4, 5, 7, 8, 9, 1000, 1023, 1024, 1025, 1<<24 - 1, 1 << 24, 1<<24 + 1, 1 << 26} {
			if got, want := m.Predict(n), ref(sizes, nanos, n); !near(got, want, 1e-12) {
				t.Fatalf("pow2 %v: Predict(%d) = %v, want %v", pow2, n, got, want)
			}
		}
		for i := 0; i < 2000; i++ {
			n := int(rnd() * (1 << 25))
			if got, want := m.Predict(n), ref(sizes, nanos, n); !near(got, want, 1e-12) {
				t.Fatalf("pow2 %v: Predict(%d) = %v, want %v", pow2, n, got, want)
			}
		}
	}
}

func TestRailModelBandwidth(t *testing.T) {
	m := linearModel(t, 30e3, 100) // 100 MB/s: 0.1 byte/ns
	if bw := m.Bandwidth(); !near(bw, 0.1, 1e-9) {
		t.Fatalf("Bandwidth %v, want 0.1", bw)
	}
	flat := mustModel(t, []int64{100, 200}, []float64{1000, 1000})
	if bw := flat.Bandwidth(); !near(bw, 0.2, 1e-12) {
		t.Fatalf("flat tail: Bandwidth %v, want 0.2", bw)
	}
}

// TestRailModelCapacity: Capacity is the exact inverse of Predict:
// Predict(c) <= b < Predict(c+1), on many curves and budgets, with and
// without a learned correction.
func TestRailModelCapacity(t *testing.T) {
	curves := []struct {
		name  string
		sizes []int64
		nanos []float64
	}{
		{"three samples", []int64{100, 200, 400}, []float64{1000, 2000, 2500}},
		{"non-monotone", []int64{1, 2, 4, 8, 16, 32}, []float64{10, 5, 20, 15, 15, 70}},
		{"flat runs", []int64{64, 128, 256, 512, 1024}, []float64{300, 300, 300, 900, 900}},
		{"one sample", []int64{4096}, []float64{7000}},
		{"fractional slopes", []int64{3, 7, 1000, 1 << 20}, []float64{1.5, 1.7, 3.3, 1e6 / 3}},
	}
	var linear []int64
	var linNanos []float64
	for s := int64(1); s <= 1<<30; s *= 2 {
		linear = append(linear, s)
		linNanos = append(linNanos, 30e3+float64(s)*10)
	}
	curves = append(curves, struct {
		name  string
		sizes []int64
		nanos []float64
	}{"linear 100 MB/s", linear, linNanos})
	for _, c := range curves {
		for _, factor := range []float64{1, 2.7, 0.3} {
			m := mustModel(t, c.sizes, c.nanos)
			m.factor.Store(math.Float64bits(factor))
			var budgets []float64
			for b := 0.25; b < 1e13; b *= 1.37 {
				budgets = append(budgets, b)
			}
			for _, v := range c.nanos {
				budgets = append(budgets, v*factor, math.Nextafter(v*factor, 0), math.Nextafter(v*factor, math.Inf(1)))
			}
			budgets = append(budgets, 0, -1, math.NaN())
			for _, b := range budgets {
				n := m.Capacity(b)
				if n > 0 && !(m.Predict(n) <= b) {
					t.Fatalf("%s ×%v: Capacity(%v) = %d but Predict(%d) = %v", c.name, factor, b, n, n, m.Predict(n))
				}
				if n < maxCapacity && m.Predict(n+1) <= b {
					t.Fatalf("%s ×%v: Capacity(%v) = %d but Predict(%d) = %v fits", c.name, factor, b, n, n+1, m.Predict(n+1))
				}
			}
		}
	}
	m := linearModel(t, 30e3, 100)
	if n := m.Capacity(math.Inf(1)); n != maxCapacity {
		t.Fatalf("Capacity(+Inf) = %d", n)
	}
}

// TestRailModelObserve: the correction moves a quarter of the way per
// observation, converges, is clamped, and ignores small frames and bad
// durations; Capacity and Bandwidth follow it.
func TestRailModelObserve(t *testing.T) {
	const n = 1 << 20
	tests := []struct {
		name   string
		ratio  float64 // observed over the curve's time
		size   int
		times  int
		factor float64
		tol    float64
	}{
		{"2x slower converges to 2 within 15", 2, n, 15, 2, 0.03},
		{"one observation moves a quarter", 4, n, 1, 1.75, 1e-12},
		{"4x faster", 0.25, n, 40, 0.25, 1e-3},
		{"clamped at 16", 1000, n, 100, 16, 0},
		{"clamped at 1/16", 1e-6, n, 100, 1.0 / 16, 0},
		{"frames under ObserveMin are ignored", 3, ObserveMin - 1, 10, 1, 0},
		{"ObserveMin itself counts", 3, ObserveMin, 1, 1.5, 1e-12},
		{"zero durations are ignored", 0, n, 10, 1, 0},
		{"negative durations are ignored", -1, n, 10, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := linearModel(t, 30e3, 100)
			xfer := m.transfer(tc.size)
			for i := 0; i < tc.times; i++ {
				m.Observe(tc.size, tc.ratio*xfer)
			}
			if f := m.Factor(); math.Abs(f-tc.factor) > tc.tol {
				t.Fatalf("factor %v after %d observations, want %v", f, tc.times, tc.factor)
			}
			f := m.Factor()
			if want := m.nanos[0] + f*m.transfer(n); !near(m.Predict(n), want, 1e-12) {
				t.Fatalf("Predict %v, want %v", m.Predict(n), want)
			}
			if bw := m.Bandwidth(); !near(bw, 0.1/f, 1e-9) {
				t.Fatalf("Bandwidth %v, want %v", bw, 0.1/f)
			}
		})
	}
	m := linearModel(t, 30e3, 100)
	m.Observe(n, math.NaN())
	m.Observe(n, math.Inf(1))
	if m.Factor() != 1 {
		t.Fatalf("NaN or Inf changed the factor to %v", m.Factor())
	}
	c := m.Capacity(1e6)
	m.Observe(n, 2*m.Predict(n))
	m.Observe(n, 2*m.Predict(n)/m.Factor()) // exactly 2 from now on
	if c2 := m.Capacity(1e6); c2 >= c {
		t.Fatalf("a slower rail moves %d bytes in 1 ms, before %d", c2, c)
	}
}

// TestRailModelConcurrent: Observe on one goroutine while others predict
// (go test -race).
func TestRailModelConcurrent(t *testing.T) {
	m := linearModel(t, 30e3, 100)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 2000; i++ {
			m.Observe(1<<20, float64(1e7+i*1e4))
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 2000; i++ {
			if m.Predict(1<<20) <= 0 || m.Capacity(1e7) < 0 || m.Bandwidth() <= 0 {
				t.Error("bad prediction")
				return
			}
		}
	}()
	wg.Wait()
}

func TestNewRailModelErrors(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int64
		nanos []float64
		want  string
	}{
		{"no samples", nil, nil, "no samples"},
		{"lengths differ", []int64{1, 2}, []float64{1}, "2 sizes but 1 times"},
		{"zero size", []int64{0, 2}, []float64{1, 2}, "size 0"},
		{"negative size", []int64{-4}, []float64{1}, "size -4"},
		{"equal sizes", []int64{1, 2, 2}, []float64{1, 2, 3}, "not strictly increasing at sample 2"},
		{"decreasing sizes", []int64{4, 2}, []float64{1, 2}, "not strictly increasing"},
		{"zero time", []int64{1, 2}, []float64{1, 0}, "time 0 ns"},
		{"negative time", []int64{1}, []float64{-3}, "time -3 ns"},
		{"NaN time", []int64{1}, []float64{math.NaN()}, "NaN"},
		{"infinite time", []int64{1, 2}, []float64{1, math.Inf(1)}, "+Inf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewRailModel(tc.sizes, tc.nanos)
			if err == nil || m != nil {
				t.Fatalf("no error (model %v)", m)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}
