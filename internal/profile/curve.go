package profile

import (
	"math"
	"slices"
)

// At returns the curve's time at size, by linear interpolation between the
// two neighbouring samples (seed 000 §III-A: transfer times are close to
// affine in the size between log-spaced samples). Below the first sample
// the first time holds (a smaller message is not faster than the fixed
// costs); above the last, the last segment's slope continues (the
// bandwidth-bound regime).
func (c Curve) At(size float64) float64 {
	return c.interp(size, func(s Sample) float64 { return s.Median })
}

// StdErr returns an estimate of the standard error of the median at size:
// 0.93 × IQR / √reps, which is 1.2533 σ / √n with σ ≈ IQR / 1.349 for
// roughly normal timings. Two curves closer than a couple of these are
// indistinguishable by the samples.
func (c Curve) StdErr(size float64) float64 {
	return c.interp(size, func(s Sample) float64 {
		return 0.93 * (s.P75 - s.P25) / math.Sqrt(float64(s.Reps))
	})
}

func (c Curve) interp(size float64, v func(Sample) float64) float64 {
	n := len(c)
	switch {
	case n == 0:
		return math.NaN()
	case n == 1 || size <= float64(c[0].Size):
		return v(c[0])
	}
	i, _ := slices.BinarySearchFunc(c, size, func(s Sample, x float64) int {
		switch {
		case float64(s.Size) < x:
			return -1
		case float64(s.Size) > x:
			return 1
		}
		return 0
	})
	if i >= n { // past the end: extend the last segment
		i = n - 1
	}
	a, b := c[i-1], c[i]
	x0, x1 := float64(a.Size), float64(b.Size)
	y := v(a) + (v(b)-v(a))*(size-x0)/(x1-x0)
	return math.Max(y, 0)
}

// Sizes returns the sampled sizes.
func (c Curve) Sizes() []int64 {
	out := make([]int64, len(c))
	for i, s := range c {
		out[i] = s.Size
	}
	return out
}

// Span returns the first and last sampled sizes.
func (c Curve) Span() (lo, hi int64) {
	if len(c) == 0 {
		return 0, 0
	}
	return c[0].Size, c[len(c)-1].Size
}

// grid returns the sorted union of the curves' sizes within [lo, hi]: the
// points where two or more curves are compared.
func grid(lo, hi int64, curves ...Curve) []int64 {
	var g []int64
	for _, c := range curves {
		for _, s := range c {
			if s.Size >= lo && s.Size <= hi {
				g = append(g, s.Size)
			}
		}
	}
	slices.Sort(g)
	return slices.Compact(g)
}
