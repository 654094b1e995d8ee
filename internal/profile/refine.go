package profile

import (
	"math"
	"slices"
)

// Probe asks a sampling pass to time Methods at Size: a size not sampled
// yet, or one sampled already whose points need more round trips.
type Probe struct {
	Size    int64    `json:"size"`
	Methods []string `json:"methods"`
}

// MinStep is the finest spacing refinement samples at: an interval between
// two sampled sizes is split while its ends are more than an eighth of an
// octave apart (2^(1/8)). Finer than this, linear interpolation between the
// samples is as good as another sample.
var MinStep = math.Pow(2, 1.0/8)

// Refine returns where a sampling pass should time t's methods next so that
// the thresholds Tune derives from them are placed where the curves say —
// adaptive refinement around what a coarse pass found, most urgent first:
//
//  1. each threshold, and each crossing beyond noise between adjacent
//     sampled sizes, lies between two sampled sizes: their geometric
//     midpoint, with the methods compared there, until the two are
//     MinStep apart (curves that cross more than once are sampled densely
//     around every crossing);
//  2. the two sampled sizes on either side of each such threshold or
//     crossing, sizes a threshold leaves on a method slower beyond noise
//     (only where the curves cross more than once: Decision.Slower), and
//     sizes where two compared methods differ by more than the least noise
//     (5%) but within the noise of their points: the same size again, with
//     both methods, so that a displaced point is outvoted and their points'
//     standard errors shrink — as long as either holds fewer than
//     enough(size) round trips there.
//
// Ranges where one method is clearly faster, or where the compared methods
// are within 5% of each other (as good as each other), need nothing more.
// available is as for Tune. A probe's methods are the ones compared there;
// the pass times each where it can.
func (t *Transport) Refine(available []string, enough func(size int64) int) []Probe {
	tu, err := t.tune("", available)
	if err != nil {
		return nil
	}
	r := refiner{t: t, enough: enough, at: map[int64]int{}}
	for _, d := range tu.Decisions {
		a, b := t.resolver(tu, d.Name, d.Below), t.resolver(tu, d.Name, d.Above)
		g := grid(d.Lo, d.Hi, d.BelowCurve, d.AboveCurve)
		if d.Size > d.Lo && d.Size <= d.Hi {
			r.split(g, float64(d.Size), a, b)
		}
		r.crossings(g, d.BelowCurve, d.AboveCurve, a, b)
		for _, x := range d.Slower {
			r.again(x, a(float64(x)), b(float64(x)))
		}
		r.unresolved(g, d.BelowCurve, d.AboveCurve, a, b)
	}
	if len(tu.Large) > 1 {
		// The boundaries between large-message methods, above the eager
		// limit, and their unresolved sizes.
		var curves []Curve
		for _, rg := range tu.Large {
			curves = append(curves, t.Methods[rg.Method])
		}
		lo, hi := tu.Large[0].From, int64(math.MaxInt64)
		g := grid(lo, hi, curves...)
		for i := 1; i < len(tu.Large); i++ {
			p, m := tu.Large[i-1].Method, tu.Large[i].Method
			r.split(g, float64(tu.Large[i].From), fixed(p), fixed(m))
		}
	}
	if len(tu.Large) > 0 {
		// Every method against the fastest at each size above the eager
		// limit: a method the samples cannot yet tell from the fastest may
		// be the faster.
		var names []string
		for _, m := range LargeMethods {
			if n := RendezvousVia(m); len(t.Methods[n]) > 0 && (available == nil || slices.Contains(available, m)) {
				names = append(names, n)
			}
		}
		var curves []Curve
		for _, n := range names {
			curves = append(curves, t.Methods[n])
		}
		for _, x := range grid(tu.Large[0].From, math.MaxInt64, curves...) {
			best := names[0]
			for _, n := range names {
				if t.Methods[n].At(float64(x)) < t.Methods[best].At(float64(x)) {
					best = n
				}
			}
			for _, n := range names {
				if n != best {
					r.unresolved([]int64{x}, t.Methods[best], t.Methods[n], fixed(best), fixed(n))
				}
			}
		}
	}
	return append(r.split1, r.again1...)
}

// resolver returns, for one side of decision name, which sampled method
// stands for it at a size: a composite side ("eager", the rendezvous's best
// method) is the method Tune's choice by size gives there.
func (t *Transport) resolver(tu *Tuning, decision, side string) func(float64) string {
	switch {
	case decision == "rendezvous" && side == "eager":
		return func(x float64) string {
			if int64(x) >= tu.Iovec {
				return EagerIovec
			}
			return EagerCopy
		}
	case decision == "rendezvous":
		return func(x float64) string { return MethodAt(tu.rndvRanges, int64(x)) }
	}
	return fixed(side)
}

func fixed(name string) func(float64) string { return func(float64) string { return name } }

// refiner gathers probes, one per size, in two classes: splits of
// intervals first, then sizes sampled again.
type refiner struct {
	t              *Transport
	enough         func(size int64) int
	split1, again1 []Probe
	at             map[int64]int // size → 1 + index in split1, or −(1 + index in again1)
}

// add asks for methods at size x in class cls (the first: splits).
func (r *refiner) add(x int64, first bool, methods ...string) {
	if i, ok := r.at[x]; ok {
		var p *Probe
		if i > 0 {
			p = &r.split1[i-1]
		} else {
			p = &r.again1[-i-1]
		}
		for _, m := range methods {
			if !slices.Contains(p.Methods, m) {
				p.Methods = append(p.Methods, m)
			}
		}
		return
	}
	p := Probe{Size: x}
	for _, m := range methods {
		if !slices.Contains(p.Methods, m) {
			p.Methods = append(p.Methods, m)
		}
	}
	if first {
		r.split1 = append(r.split1, p)
		r.at[x] = len(r.split1)
	} else {
		r.again1 = append(r.again1, p)
		r.at[x] = -len(r.again1)
	}
}

// split asks for the geometric midpoint of the interval of grid g that
// holds x (a threshold or crossing between two sampled sizes), with the
// methods a and b stand for at both ends, while the interval is wider than
// MinStep.
func (r *refiner) split(g []int64, x float64, a, b func(float64) string) {
	i, _ := slices.BinarySearch(g, int64(math.Ceil(x)))
	if i <= 0 || i >= len(g) {
		return // at or beyond the sampled ends
	}
	x0, x1 := float64(g[i-1]), float64(g[i])
	// The two samples that place it are sampled again as well: one
	// displaced point (a pass's eager-iovec at 4 KiB, 36% above what a
	// program measured) makes a crossing by itself, and more blocks, in
	// another stretch of time, undo it.
	r.again(g[i-1], a(x0), b(x0))
	r.again(g[i], a(x1), b(x1))
	if x1/x0 <= MinStep {
		return
	}
	mid := int64(math.Round(math.Sqrt(x0 * x1)))
	if mid <= g[i-1] || mid >= g[i] {
		return
	}
	r.add(mid, true, a(x0), b(x0), a(x1), b(x1))
}

// crossings splits each interval of g whose ends differ beyond noise in
// opposite directions: the curves cross inside it. (Where sizes within
// noise lie between, the curves are as good as each other there, or
// unresolved and sampled again.)
func (r *refiner) crossings(g []int64, a, b Curve, ma, mb func(float64) string) {
	prev := 0
	for i, x := range g {
		_, _, sign := difference(a, b, float64(x))
		if i > 0 && sign != 0 && sign == -prev {
			r.split(g, math.Sqrt(float64(g[i-1])*float64(x)), ma, mb)
		}
		prev = sign
	}
}

// again asks for size x again, with methods, if any of them holds fewer
// than enough round trips there (or no sample).
func (r *refiner) again(x int64, methods ...string) {
	for _, m := range methods {
		if s, ok := r.t.sampleAt(m, x); !ok || s.Reps < r.enough(x) {
			r.add(x, false, methods...)
			return
		}
	}
}

// unresolved asks again for each size of g where curves a and b (standing
// for methods ma and mb there) differ by more than the least noise but
// within the noise of their points.
func (r *refiner) unresolved(g []int64, a, b Curve, ma, mb func(float64) string) {
	for _, x := range g {
		ta, tb, sign := difference(a, b, float64(x))
		if sign == 0 && math.Abs(ta-tb) > relNoise*math.Min(ta, tb) {
			r.again(x, ma(float64(x)), mb(float64(x)))
		}
	}
}

// sampleAt returns method's sample at exactly size x.
func (t *Transport) sampleAt(method string, x int64) (Sample, bool) {
	c := t.Methods[method]
	i, ok := slices.BinarySearchFunc(c, x, func(s Sample, x int64) int {
		switch {
		case s.Size < x:
			return -1
		case s.Size > x:
			return 1
		}
		return 0
	})
	if !ok {
		return Sample{}, false
	}
	return c[i], true
}
