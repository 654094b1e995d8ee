package tune

import (
	"fmt"
	"math"
)

// Stats is what the selector knows of one implementation for one Key: an
// exponential average of its running time (seed 001 §6.1.2), an
// exponentially weighted variance around it, and how many samples they stand
// on. Times are float64 seconds, which keeps nanosecond resolution for any
// duration under about 100 days and reads naturally in a saved State.
type Stats struct {
	// Avg is the exponential average running time, in seconds.
	Avg float64 `json:"avg_s"`
	// Var is the exponentially weighted variance of the running time, in
	// seconds squared.
	Var float64 `json:"var_s2"`
	// Calls is the number of samples behind Avg and Var: calls recorded
	// since the implementation was first measured, or last re-measured by a
	// re-exploration (see LotteryConfig.DriftCalls).
	Calls int64 `json:"calls"`
}

// Std is the standard deviation of the running time, in seconds.
func (s Stats) Std() float64 { return math.Sqrt(s.Var) }

// add folds in sample x (seconds). The newest sample weighs max(w, 1/n)
// after n samples: the first 1/w samples form a plain mean and (population)
// variance, so a first sample does not keep an outsized share of the
// average, and from then on older samples fade geometrically by 1-w.
func (s *Stats) add(x, w float64) {
	if s.Calls < math.MaxInt64 {
		s.Calls++
	}
	a := max(w, 1/float64(s.Calls))
	d := x - s.Avg
	s.Avg += a * d
	// West's incremental weighted variance; with a = 1/n it is Welford's.
	s.Var = (1 - a) * (s.Var + a*d*d)
}

// combine pools two summaries of the same implementation, weighting each by
// its Calls: the mean of the means, and the variance of the pooled
// population (each side's variance plus its mean's spread around the pooled
// mean), so a disagreement between the two shows as spread rather than
// vanishing.
func combine(a, b Stats) Stats {
	switch {
	case a.Calls <= 0:
		return b
	case b.Calls <= 0:
		return a
	}
	na, nb := float64(a.Calls), float64(b.Calls)
	n := na + nb
	m := (na*a.Avg + nb*b.Avg) / n
	da, db := a.Avg-m, b.Avg-m
	v := (na*(a.Var+da*da) + nb*(b.Var+db*db)) / n
	calls := a.Calls + b.Calls
	if calls < 0 { // both near MaxInt64
		calls = math.MaxInt64
	}
	return Stats{Avg: m, Var: v, Calls: calls}
}

// check reports why s cannot be restored, or nil.
func (s Stats) check() error {
	switch {
	case math.IsNaN(s.Avg) || math.IsInf(s.Avg, 0) || s.Avg < 0:
		return fmt.Errorf("average %v is not a finite non-negative time", s.Avg)
	case math.IsNaN(s.Var) || math.IsInf(s.Var, 0) || s.Var < 0:
		return fmt.Errorf("variance %v is not finite and non-negative", s.Var)
	case s.Calls < 0:
		return fmt.Errorf("calls %d is negative", s.Calls)
	}
	return nil
}
