package profile

import (
	"fmt"
	"math"
	"strings"

	"github.com/commtune/commtune/internal/units"
)

// Range is one method's share of the sizes: from From bytes (inclusive) to
// the next range's From.
type Range struct {
	From   int64  `json:"from"`
	Method string `json:"method"`
}

// switchPenalty is what one more range costs in Envelope, against a
// method's regret within noise (which is none): among methods the samples
// cannot tell apart, the fewest ranges.
const switchPenalty = 0.05

// Envelope divides [lo, hi] among several methods (the large-message
// methods of one transport, in any order): at each compared size, a
// method within noise of the fastest there (never one the curves, as
// sampled, show slower beyond noise: difference), with ranges found by
// dynamic programming that changes method as seldom as that allows. Ties
// keep the method already in use, then the earlier in order. Boundaries lie
// at the interpolated crossing of the two neighbours' curves (as in
// Switch). It returns the ranges, from lo up, and the reason for each
// boundary.
func Envelope(curves map[string]Curve, order []string, lo, hi int64) ([]Range, []string) {
	var names []string
	var cs []Curve
	for _, m := range order {
		if c := curves[m]; len(c) > 0 {
			names, cs = append(names, m), append(cs, c)
		}
	}
	if len(cs) == 0 {
		return nil, nil
	}
	if len(cs) == 1 {
		return []Range{{From: lo, Method: names[0]}}, []string{names[0] + " is the only method"}
	}
	g := grid(lo, hi, cs...)
	if len(g) == 0 {
		return []Range{{From: lo, Method: names[0]}}, []string{"no samples in range"}
	}
	n, k := len(g), len(cs)
	loss := make([][]float64, n) // loss[i][m]
	for i, x := range g {
		loss[i] = make([]float64, k)
		best := 0
		for m := range cs {
			if cs[m].At(float64(x)) < cs[best].At(float64(x)) {
				best = m
			}
		}
		for m := range cs {
			if _, _, s := difference(cs[best], cs[m], float64(x)); s < 0 {
				loss[i][m] = math.Inf(1) // slower beyond noise: never kept
			}
		}
	}
	cost := make([][]float64, n)
	from := make([][]int, n)
	for i := range g {
		cost[i], from[i] = make([]float64, k), make([]int, k)
		for m := range cs {
			if i == 0 {
				cost[i][m] = loss[i][m]
				from[i][m] = m
				continue
			}
			bestPrev, bestCost := m, cost[i-1][m] // staying wins ties
			for p := range cs {
				if c := cost[i-1][p] + switchPenalty; c < bestCost-1e-12 {
					bestPrev, bestCost = p, c
				}
			}
			cost[i][m] = bestCost + loss[i][m]
			from[i][m] = bestPrev
		}
	}
	last := 0
	for m := range cs {
		if cost[n-1][m] < cost[n-1][last]-1e-12 {
			last = m
		}
	}
	path := make([]int, n)
	path[n-1] = last
	for i := n - 1; i > 0; i-- {
		path[i-1] = from[i][path[i]]
	}
	ranges := []Range{{From: lo, Method: names[path[0]]}}
	var why []string
	diff := func(p, m, i int) float64 { return cs[p].At(float64(g[i])) - cs[m].At(float64(g[i])) }
	for i := 1; i < n; i++ {
		p, m := path[i-1], path[i]
		if p == m {
			continue
		}
		// The change may move anywhere the two methods tie (both within
		// noise of the best): to where their raw curves cross, if they
		// cross there once, else to the middle of the stretch.
		lo, hi := i, i
		for lo > 1 && path[lo-1] == p && path[lo-2] == p && loss[lo-1][m] == 0 {
			lo--
		}
		for hi < n-1 && path[hi] == m && path[hi+1] == m && loss[hi][p] == 0 {
			hi++
		}
		k := lo + (hi-lo)/2
		var cross []int
		for j := lo; j <= hi; j++ {
			if d0, d1 := diff(p, m, j-1), diff(p, m, j); d0 <= 0 && d1 > 0 || d0 >= 0 && d1 < 0 {
				cross = append(cross, j)
			}
		}
		if len(cross) == 1 {
			k = cross[0]
		}
		at := boundary(g[k-1], g[k], diff(p, m, k-1), diff(p, m, k))
		ranges = append(ranges, Range{From: at, Method: names[m]})
		why = append(why, fmt.Sprintf("%s overtakes %s at %s", names[m], names[p], units.FormatSize(at)))
	}
	if len(ranges) == 1 {
		why = append(why, fmt.Sprintf("%s is as fast or faster than %s from %s to %s",
			names[path[0]], strings.Join(without(names, names[path[0]]), ", "), units.FormatSize(lo), units.FormatSize(hi)))
	}
	return ranges, why
}

func without(names []string, drop string) []string {
	var out []string
	for _, n := range names {
		if n != drop {
			out = append(out, n)
		}
	}
	return out
}

// MethodAt returns the method of the range holding size.
func MethodAt(ranges []Range, size int64) string {
	m := ""
	for _, r := range ranges {
		if size >= r.From || m == "" {
			m = r.Method
		}
	}
	return m
}

// compose builds the curve of a size-dependent choice of methods: at each
// size sampled by any of them, the time of the method choose picks.
func compose(curves map[string]Curve, choose func(size int64) string) Curve {
	var all []Curve
	for _, c := range curves {
		all = append(all, c)
	}
	var out Curve
	for _, x := range grid(1, math.MaxInt64, all...) {
		c := curves[choose(x)]
		if len(c) == 0 {
			continue
		}
		f := float64(x)
		med := c.At(f)
		// Keep the chosen curve's spread around its interpolated median.
		spread := c.interp(f, func(s Sample) float64 { return s.P75 - s.P25 })
		reps := 1 << 30
		for _, s := range c {
			reps = min(reps, s.Reps)
		}
		out = append(out, Sample{Size: x, Median: med, P25: math.Max(med-spread/2, med/2), P75: med + spread/2, Reps: reps})
	}
	return out
}
