// Package stats holds the statistics commtune summarizes its timings with
// — the tuner's drift baseline, the sampling pass's points, the demo's
// verdict, the benchmarks' tables — so that a mean, a median or a 99th
// percentile means the same thing in all of them.
package stats

import "slices"

// Number is the type of the values a statistic is taken over: float64
// measurements, and integer counts, time.Duration among them (a quantile
// of durations is in nanoseconds).
type Number interface {
	~int | ~int64 | ~float64
}

// Quantile returns the q-quantile of xs, leaving xs as it is (it sorts a
// copy). q is clamped to [0, 1]; the quantile of no values is 0.
//
// The rule is linear interpolation between the two closest ranks (Hyndman
// and Fan's type 7, the default of R and NumPy): with xs sorted as s, the
// quantile sits at position q·(n−1) and takes s[i] + f·(s[i+1] − s[i]) for
// its whole part i and fraction f. Its median is the mean of the middle
// two of an even count, the rule the tuner and the tables always used; it
// moves continuously with q, so that the quartiles of a point of a few
// round trips do not jump by a whole rank between neighbouring q; and it
// is what someone loading a report's raw times into R or NumPy computes.
func Quantile[T Number](xs []T, q float64) float64 {
	return Quantiles(xs, q)[0]
}

// Median returns the middle value of xs, or the mean of the middle two
// for an even count: Quantile(xs, 0.5). It leaves xs as it is; the median
// of no values is 0.
func Median[T Number](xs []T) float64 {
	return Quantile(xs, 0.5)
}

// Quantiles returns the q-quantile of xs for each q of qs, by Quantile's
// rule, sorting one copy of xs for all of them.
func Quantiles[T Number](xs []T, qs ...float64) []float64 {
	out := make([]float64, len(qs))
	if len(xs) == 0 {
		return out
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	for k, q := range qs {
		out[k] = sortedQuantile(s, q)
	}
	return out
}

// sortedQuantile is Quantile over s, sorted and not empty.
func sortedQuantile[T Number](s []T, q float64) float64 {
	if !(q > 0) { // NaN too
		return float64(s[0])
	}
	pos := min(q, 1) * float64(len(s)-1)
	i := int(pos)
	f := pos - float64(i)
	lo := float64(s[i])
	if f == 0 {
		return lo
	}
	hi := float64(s[i+1])
	if lo == hi {
		return lo
	}
	// (1−f)·lo + f·hi rather than lo + f·(hi − lo): at f = ½ it is the
	// correctly rounded mean of the two, as (lo + hi) / 2 is, without
	// overflowing where lo + hi would.
	return (1-f)*lo + f*hi
}
