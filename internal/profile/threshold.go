package profile

import (
	"fmt"
	"math"
	"strings"

	"github.com/commtune/commtune/internal/units"
)

// Decision is one threshold and how it was found.
type Decision struct {
	Name  string `json:"name"`  // iovec, rendezvous, aggregation, or large
	Below string `json:"below"` // the method used under Size
	Above string `json:"above"` // the method used from Size up
	// Size is where Above takes over: Lo when Above wins everywhere
	// sampled, Hi+1 when Below does (no switch within the range).
	Size   int64 `json:"size"`
	Lo, Hi int64 `json:"-"` // the sizes compared
	// Crossings are the sizes where the curves cross by more than noise,
	// interpolated between adjacent samples.
	Crossings []float64 `json:"crossings,omitempty"`
	// Slower lists the compared sizes where the method the threshold
	// gives them is slower beyond noise than the other: none unless the
	// curves cross beyond noise more than once.
	Slower []int64 `json:"slower,omitempty"`
	Rule   string  `json:"rule"` // why Size, in words
	// BelowCurve and AboveCurve are the curves compared, as sampled (for
	// plots): a composite where a side stands for a choice by size.
	BelowCurve, AboveCurve Curve `json:"-"`
}

// Never reports whether Below wins over the whole range (no switch).
func (d Decision) Never() bool { return d.Size > d.Hi }

// Noise rules. relNoise is the smallest relative difference taken as
// real. Measured here over eight full passes, two methods whose medians
// differ by less than about 5% swap order from pass to pass (copy and
// iovec at small sizes, on both transports); at 5% the iovec choice came
// out the same in all eight, at 2% in four. Beyond it, two curves must also
// differ by more than twice the standard error of their difference.
const relNoise = 0.05

// Noise returns the least difference between the times of curves a and b
// at size x that the thresholds take as real (ns): 5% of the faster, or
// twice the standard error of the difference of the two medians,
// whichever is larger.
func Noise(a, b Curve, x int64) float64 {
	return noise(a, b, float64(x), a.At(float64(x)), b.At(float64(x)))
}

func noise(a, b Curve, x, ta, tb float64) float64 {
	return math.Max(relNoise*math.Min(ta, tb), 2*math.Hypot(a.StdErr(x), b.StdErr(x)))
}

// difference compares a and b at size x: the sign of a−b when it exceeds
// the noise (−1: a is faster, +1: b is), else 0.
func difference(a, b Curve, x float64) (ta, tb float64, sign int) {
	ta, tb = a.At(x), b.At(x)
	n := noise(a, b, x, ta, tb)
	switch {
	case ta+n < tb:
		sign = -1
	case tb+n < ta:
		sign = 1
	}
	return
}

// Switch finds the size at which method b should replace method a (a for
// smaller messages, b from the threshold up), comparing their curves over
// the sizes in [lo, hi] sampled by either (seed 000 §III-B).
//
// The rule, which also covers curves that never cross, cross several
// times, or run within noise of each other, compares the curves as sampled
// — what Predict answers — at every size either was sampled at:
//
//  1. At each compared size, a method is slower beyond noise where the
//     other's time plus the noise of the two points (difference) is
//     below its own.
//  2. A switch position is admissible when neither side keeps a method
//     slower beyond noise: a is not slower below it, b not slower from it
//     on. The threshold is the raw crossing of the curves if exactly one
//     lies among the admissible positions (with one clean crossing, the
//     seed's interpolated crossing), else the earliest admissible
//     position: b, the method for larger messages, is the one that scales
//     (by reference rather than copied, rendezvous rather than buffered
//     unexpected, sent at once rather than held for aggregation), so it
//     takes over as soon as the samples cannot tell it slower.
//  3. When no position is admissible — the curves cross beyond noise more
//     than once, and one threshold cannot follow them — the threshold is
//     the position of least regret: the relative time lost by the slower
//     method, integrated over log size. The sizes it leaves on a method
//     slower beyond noise are named in Rule (Decision.Slower); a sampling
//     pass samples such ranges again before it settles for this
//     (Refine).
//  4. The threshold lies between two compared sizes: at the crossing of
//     the two curves interpolated linearly between them, or at their
//     geometric mean where they do not cross there.
func Switch(name string, a, b Curve, aName, bName string, lo, hi int64) Decision {
	d := Decision{Name: name, Below: aName, Above: bName, Lo: lo, Hi: hi, BelowCurve: a, AboveCurve: b}
	g := grid(lo, hi, a, b)
	if len(a) == 0 || len(b) == 0 || len(g) == 0 {
		d.Size = hi + 1
		d.Rule = "not enough samples to compare"
		return d
	}
	n := len(g)
	w := logWeights(g)
	lossA := make([]float64, n) // relative time lost using a at g[i], beyond noise
	lossB := make([]float64, n)
	diff := make([]float64, n) // a − b
	signs := make([]int, n)
	for i, x := range g {
		ta, tb, s := difference(a, b, float64(x))
		diff[i], signs[i] = ta-tb, s
		switch s {
		case 1:
			lossA[i] = (ta - tb) / tb
		case -1:
			lossB[i] = (tb - ta) / ta
		}
	}
	d.Crossings = crossings(g, diff, signs)

	// regret[k]: a on g[:k], b on g[k:]; admissible[k] when both are zero.
	regret := make([]float64, n+1)
	for i := range g {
		regret[0] += w[i] * lossB[i]
	}
	for k := 1; k <= n; k++ {
		regret[k] = regret[k-1] - w[k-1]*lossB[k-1] + w[k-1]*lossA[k-1]
	}
	var ok []int
	slowA, slowB := 0, 0 // sizes where a, b is slower beyond noise, below and from k
	for _, l := range lossB {
		if l > 0 {
			slowB++
		}
	}
	for k := 0; k <= n; k++ {
		if k > 0 {
			if lossA[k-1] > 0 {
				slowA++
			}
			if lossB[k-1] > 0 {
				slowB--
			}
		}
		if slowA == 0 && slowB == 0 {
			ok = append(ok, k)
		}
	}
	how := byEarliest
	if len(ok) == 0 {
		how = byLeast
		best := 0
		for k, r := range regret {
			if r < regret[best]-1e-12 {
				best = k
			}
		}
		ok = []int{best}
	}
	k := ok[0]
	var rawCross []int
	for _, j := range ok {
		if j >= 1 && j < n && (diff[j-1] <= 0 && diff[j] > 0 || diff[j-1] >= 0 && diff[j] < 0) {
			rawCross = append(rawCross, j)
		}
	}
	if how == byEarliest && len(rawCross) == 1 {
		k, how = rawCross[0], byCrossing
	}
	switch {
	case k == 0:
		d.Size = lo
	case k == n:
		d.Size = hi + 1
	default:
		d.Size = boundary(g[k-1], g[k], diff[k-1], diff[k])
	}
	for i, x := range g {
		if i < k && lossA[i] > 0 || i >= k && lossB[i] > 0 {
			d.Slower = append(d.Slower, x)
		}
	}
	d.Rule = switchRule(d, regret[k], how, len(ok) > 1)
	return d
}

// boundary places a threshold between adjacent compared sizes x0 < x1:
// where the difference of the two curves crosses zero, interpolated
// linearly, else at their geometric mean, rounded to the nearest byte. The
// threshold is the first size of the upper side, so it lies in (x0, x1].
func boundary(x0, x1 int64, d0, d1 float64) int64 {
	var x float64
	if d0 <= 0 && d1 > 0 || d0 >= 0 && d1 < 0 {
		x = float64(x0) + (float64(x1)-float64(x0))*d0/(d0-d1)
	} else {
		x = math.Sqrt(float64(x0) * float64(x1))
	}
	s := int64(math.Round(x))
	return min(max(s, x0+1), x1)
}

// crossings returns where the difference changes sign beyond noise: a run
// of within-noise sizes between a significant − and + counts once.
func crossings(g []int64, diff []float64, signs []int) []float64 {
	var out []float64
	last := -1 // index of the last significant sample
	for i, s := range signs {
		if s == 0 {
			continue
		}
		if last >= 0 && signs[last] != s {
			if i == last+1 {
				x0, x1 := float64(g[last]), float64(g[i])
				out = append(out, x0+(x1-x0)*diff[last]/(diff[last]-diff[i]))
			} else {
				out = append(out, math.Sqrt(float64(g[last])*float64(g[i])))
			}
		}
		last = i
	}
	return out
}

// logWeights are trapezoid weights for integrating over log2 of the size.
func logWeights(g []int64) []float64 {
	w := make([]float64, len(g))
	if len(g) == 1 {
		w[0] = 1
		return w
	}
	for i := range g {
		lo, hi := max(i-1, 0), min(i+1, len(g)-1)
		w[i] = (math.Log2(float64(g[hi])) - math.Log2(float64(g[lo]))) / 2
	}
	return w
}

// How a Switch placed its threshold.
const (
	byCrossing = iota // at the one raw crossing among admissible positions
	byEarliest        // the earliest admissible position
	byLeast           // no admissible position: the least regret
)

func switchRule(d Decision, regret float64, how int, several bool) string {
	var b strings.Builder
	switch {
	case how == byLeast:
		fmt.Fprintf(&b, "no one threshold keeps both methods to where they are as fast (least regret at %s)", units.FormatSize(d.Size))
	case d.Never():
		fmt.Fprintf(&b, "%s is as fast or faster up to %s", d.Below, units.FormatSize(d.Hi))
	case d.Size <= d.Lo:
		fmt.Fprintf(&b, "%s is as fast or faster from %s", d.Above, units.FormatSize(d.Lo))
	case how == byCrossing:
		fmt.Fprintf(&b, "the curves cross at %s", units.FormatSize(d.Size))
	case several:
		b.WriteString("earliest switch where the samples cannot tell either slower")
	default:
		fmt.Fprintf(&b, "%s is slower beyond noise below %s, %s from it", d.Below, units.FormatSize(d.Size), d.Above)
	}
	switch len(d.Crossings) {
	case 0:
		b.WriteString("; no crossing beyond noise")
	case 1:
	default:
		fmt.Fprintf(&b, "; %d crossings beyond noise (", len(d.Crossings))
		for i, x := range d.Crossings {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(units.FormatSize(int64(x)))
		}
		b.WriteString(")")
	}
	if len(d.Slower) > 0 {
		fmt.Fprintf(&b, "; slower beyond noise at %d sampled sizes, regret %.1f%%·octave", len(d.Slower), 100*regret)
	}
	return b.String()
}
