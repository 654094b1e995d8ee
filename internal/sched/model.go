package sched

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
)

// ObserveMin is the smallest frame whose post-to-completion time a
// RailModel learns from: a smaller frame returns as soon as the kernel
// takes it, so its duration says nothing about the wire.
const ObserveMin = 64 << 10

const (
	observeWeight = 0.25     // weight of one observation in the correction
	minFactor     = 1.0 / 16 // bounds of the learned correction
	maxFactor     = 16
)

// maxCapacity bounds Capacity's answer (a budget beyond any real packet).
const maxCapacity = int(^uint(0) >> 2)

// RailModel predicts how long a frame (or a Bulk chunk) of n bytes takes on
// one rail (seed 000 §III-C, seed 002 §III-C): a piecewise-linear curve of
// one-way time against size, sampled beforehand, times a correction factor
// learned from the completions the scheduler observes. Predict, Capacity
// and Bandwidth may run while Observe runs on another goroutine.
type RailModel struct {
	sizes []float64 // strictly increasing, > 0
	nanos []float64 // nondecreasing (running minimum from the largest size down), > 0
	tail  float64   // ns per byte beyond the last sample, > 0
	// pow2 is log2(sizes[0])+1 when the sizes are consecutive powers of
	// two (the usual sampling), so that base finds a size's segment from
	// its bit length; 0 otherwise.
	pow2 int
	// factor is the learned correction (observed / curve), as
	// math.Float64bits; 0 stands for 1 (a zero RailModel).
	factor atomic.Uint64
}

// NewRailModel returns the model of the curve sampled at sizes (bytes,
// strictly increasing, > 0) with one-way times nanos (ns, finite, > 0).
// The curve is made nondecreasing by a running minimum from the largest
// size down: a message takes no less time than a smaller one, and a small
// size's sample is the one a busy spell inflates (one slow 8 KiB point
// must not raise every size above it), interpolated linearly between samples, held at the
// first sample's time below it, and extended beyond the last sample with
// the last segment's slope (or, if that is flat, the last sample's average
// time per byte).
func NewRailModel(sizes []int64, nanos []float64) (*RailModel, error) {
	if len(sizes) == 0 {
		return nil, fmt.Errorf("sched: rail model: no samples")
	}
	if len(sizes) != len(nanos) {
		return nil, fmt.Errorf("sched: rail model: %d sizes but %d times", len(sizes), len(nanos))
	}
	m := &RailModel{sizes: make([]float64, len(sizes)), nanos: make([]float64, len(nanos))}
	for i, s := range sizes {
		if s <= 0 {
			return nil, fmt.Errorf("sched: rail model: size %d at sample %d is not positive", s, i)
		}
		if i > 0 && s <= sizes[i-1] {
			return nil, fmt.Errorf("sched: rail model: sizes not strictly increasing at sample %d (%d after %d)", i, s, sizes[i-1])
		}
		t := nanos[i]
		if math.IsNaN(t) || math.IsInf(t, 0) || t <= 0 {
			return nil, fmt.Errorf("sched: rail model: time %v ns for %d bytes (sample %d) is not a positive finite number", t, s, i)
		}
		m.sizes[i], m.nanos[i] = float64(s), t
	}
	for i := len(m.nanos) - 2; i >= 0; i-- {
		m.nanos[i] = min(m.nanos[i], m.nanos[i+1])
	}
	last := len(sizes) - 1
	if last > 0 {
		m.tail = (m.nanos[last] - m.nanos[last-1]) / (m.sizes[last] - m.sizes[last-1])
	}
	if !(m.tail > 0) {
		m.tail = m.nanos[last] / m.sizes[last]
	}
	if sizes[0]&(sizes[0]-1) == 0 {
		m.pow2 = bits.Len64(uint64(sizes[0]))
		for i := 1; i < len(sizes); i++ {
			if sizes[i] != sizes[i-1]*2 {
				m.pow2 = 0
				break
			}
		}
	}
	m.factor.Store(math.Float64bits(1))
	return m, nil
}

// Factor returns the learned correction: observed time over the curve's.
func (m *RailModel) Factor() float64 {
	b := m.factor.Load()
	if b == 0 {
		return 1
	}
	return math.Float64frombits(b)
}

// base returns the curve's time for n > 0 bytes, uncorrected. At a sample
// size it returns the sample's time exactly.
func (m *RailModel) base(n float64) float64 {
	s, t := m.sizes, m.nanos
	if n <= s[0] {
		return t[0]
	}
	last := len(s) - 1
	if n >= s[last] {
		return m.seg(last, -1, n)
	}
	if m.pow2 > 0 && n == math.Trunc(n) {
		i := bits.Len64(uint64(n)) - m.pow2 // s[i] = 2^(pow2-1+i) <= n < s[i+1]
		return m.seg(i, i+1, n)
	}
	i, j := 0, last // s[i] <= n < s[j]
	for j-i > 1 {
		h := int(uint(i+j) >> 1)
		if s[h] <= n {
			i = h
		} else {
			j = h
		}
	}
	return m.seg(i, j, n)
}

// seg returns the curve's time for n bytes on the segment from sample i to
// sample j, or beyond the last sample i if j < 0. base and Capacity both
// compute with it, so that they agree to the last bit (the conversions
// forbid fused multiply-adds).
func (m *RailModel) seg(i, j int, n float64) float64 {
	s, t := m.sizes, m.nanos
	if j < 0 {
		return t[i] + float64((n-s[i])*m.tail)
	}
	return t[i] + float64((n-s[i])*(t[j]-t[i]))/(s[j]-s[i])
}

// Predict returns the predicted time, in ns, of n bytes on the rail (0 for
// nothing to send).
func (m *RailModel) Predict(n int) float64 {
	if n <= 0 {
		return 0
	}
	f := m.Factor()
	return m.base(float64(n))*f + m.fixed(f)
}

// transfer returns the curve's time for n bytes beyond its first sample,
// uncorrected: what an observed chunk compares with.
func (m *RailModel) transfer(n int) float64 { return m.base(float64(n)) - m.nanos[0] }

// fixed is the part of a prediction the correction leaves alone: the
// curve's time at its first sample, mostly latency and handshakes, which
// a rail's load does not stretch the way it stretches the transfer.
// Predict is base·f + (1−f)·t₀ = t₀ + f·(base − t₀).
func (m *RailModel) fixed(f float64) float64 { return (1 - f) * m.nanos[0] }

// Capacity returns the largest n with Predict(n) <= budget (ns): how much
// the rail moves in that time; 0 if not even one byte fits. It inverts the
// curve segment by segment, exactly with respect to Predict.
func (m *RailModel) Capacity(budget float64) int {
	f := m.Factor()
	c := m.fixed(f)
	s, t := m.sizes, m.nanos
	if !(budget >= t[0]*f+c) { // NaN too
		return 0
	}
	if math.IsInf(budget, 1) {
		return maxCapacity
	}
	b := (budget - c) / f
	last := len(s) - 1
	var x float64
	var lo, hi int // the answer is in [lo, hi): Predict(lo) <= budget < Predict(hi)
	i, j := last, -1
	if budget >= t[last]*f+c {
		x = s[last] + (b-t[last])/m.tail
		lo, hi = int(s[last]), maxCapacity
	} else {
		// The last sample i with t[i]*f <= budget (t[last]*f > budget);
		// then t[i] < t[i+1], the segment rises.
		i, j = 0, last
		for j-i > 1 {
			h := int(uint(i+j) >> 1)
			if t[h]*f+c <= budget {
				i = h
			} else {
				j = h
			}
		}
		x = s[i] + (b-t[i])*(s[j]-s[i])/(t[j]-t[i])
		lo, hi = int(s[i]), int(s[j])
	}
	n := hi - 1
	if x < float64(hi) {
		n = int(x)
	}
	if n < lo {
		n = lo
	}
	// x is exact up to rounding: a step or two settles it against
	// Predict, which is m.seg(i, j, ·)*f on [lo, hi).
	for step := 0; step < 4; step++ {
		switch {
		case n > lo && m.seg(i, j, float64(n))*f+c > budget:
			n--
		case n+1 < hi && m.seg(i, j, float64(n+1))*f+c <= budget:
			n++
		default:
			return n
		}
	}
	// Rounding went further than expected: bisect [lo, hi).
	for hi-lo > 1 {
		h := lo + (hi-lo)/2
		if m.seg(i, j, float64(h))*f+c <= budget {
			lo = h
		} else {
			hi = h
		}
	}
	return lo
}

// Bandwidth returns the rail's asymptotic bandwidth in bytes per ns (GB/s):
// the inverse slope of the curve's last segment, corrected.
func (m *RailModel) Bandwidth() float64 { return 1 / (m.tail * m.Factor()) }

// Observe records that a frame of n bytes took ns from its post to its
// completion: the correction factor moves a quarter of the way toward
// ns over the curve's transfer time (its time beyond the first sample),
// within [1/16, 16]. Frames under ObserveMin
// and non-positive durations are ignored.
func (m *RailModel) Observe(n int, ns float64) {
	if n < ObserveMin || !(ns > 0) || math.IsInf(ns, 1) {
		return
	}
	// The observation is of a chunk already under way (no handshake):
	// it compares with the curve's transfer part, beyond its first sample.
	xfer := m.transfer(n)
	if !(xfer > 0) {
		return
	}
	ratio := ns / xfer
	for {
		old := m.factor.Load()
		f := 1.0
		if old != 0 {
			f = math.Float64frombits(old)
		}
		f += observeWeight * (ratio - f)
		f = min(max(f, minFactor), maxFactor)
		if m.factor.CompareAndSwap(old, math.Float64bits(f)) {
			return
		}
	}
}
