package demo

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/commtune/commtune/internal/stats"
)

// Comparison is one operation measured on the tuned profile and on the
// built-in defaults, over runs taken in turns.
type Comparison struct {
	// Tuned and Defaults hold each the median of the runs' medians, among
	// the runs not slowed by other work (Steady), and over the same runs
	// the mean of their means and the median of their 99th percentiles.
	Tuned, Defaults Result
	// Ratios are defaults/tuned, run by run (paired: the two runs of a
	// round ran back to back, so the machine's drift falls on both).
	Ratios []float64
	Ratio  float64 // their median; above 1: tuned was faster
	// MeanRatio is the defaults' mean over tuned's (Tuned.MeanNS,
	// Defaults.MeanNS): the ratio of what the two cost on average.
	MeanRatio float64
	// SlowerRuns counts the rounds in which tuned was the slower.
	SlowerRuns int
	// LeftOut counts the runs, of either configuration, that Steady left
	// out of its time.
	LeftOut int
}

// SamePath reports whether both configurations sent the messages the same
// way, under one name or two for the same steps: their times then differ
// by noise alone.
func (c Comparison) SamePath() bool {
	return c.Tuned.Path == c.Defaults.Path || c.Tuned.Steps != "" && c.Tuned.Steps == c.Defaults.Steps
}

// Verdict is what the comparison shows.
type Verdict struct {
	Rows []Comparison
	// Noise is the widest gap, |ratio − 1|, among operations that took the
	// same path both times (and at least MinNoise): what identical code
	// measured twice on this machine differs by.
	Noise float64
	// Differ counts operations whose paths differ; Faster and Lost those of
	// them where tuned won or lost by more than Noise. A loss also needs
	// tuned slower in most rounds (LostRuns).
	Differ, Faster int
	Lost           []Comparison
}

// MinNoise is the least gap a verdict takes for noise: on two shared
// processors, medians of the same path move by a few percent between runs.
const MinNoise = 0.05

// Compare pairs the runs of each configuration operation by operation.
func Compare(tuned, defaults [][]Result) (*Verdict, error) {
	if len(tuned) == 0 || len(tuned) != len(defaults) {
		return nil, fmt.Errorf("demo: %d tuned runs against %d on the defaults", len(tuned), len(defaults))
	}
	n := len(tuned[0])
	for i := range tuned {
		if len(tuned[i]) != n || len(defaults[i]) != n {
			return nil, errors.New("demo: the runs measured different things")
		}
	}
	v := &Verdict{Noise: MinNoise}
	for op := 0; op < n; op++ {
		c := Comparison{Tuned: tuned[0][op], Defaults: defaults[0][op]}
		var tns, dns, tmean, dmean, tp99, dp99 []float64
		for r := range tuned {
			t, d := tuned[r][op], defaults[r][op]
			if t.Op != c.Tuned.Op || t.Bytes != c.Tuned.Bytes || d.Op != t.Op || d.Bytes != t.Bytes {
				return nil, fmt.Errorf("demo: run %d measured %s %d where run 0 measured %s %d", r, t.Op, t.Bytes, c.Tuned.Op, c.Tuned.Bytes)
			}
			tns, dns = append(tns, t.NS), append(dns, d.NS)
			tmean, dmean, tp99, dp99 = append(tmean, t.MeanNS), append(dmean, d.MeanNS), append(tp99, t.P99NS), append(dp99, d.P99NS)
			c.Ratios = append(c.Ratios, d.NS/t.NS)
			if t.NS > d.NS {
				c.SlowerRuns++
			}
		}
		kt, kd := steadyRuns(tns), steadyRuns(dns)
		c.Tuned.NS, c.Tuned.MeanNS, c.Tuned.P99NS = stats.Median(pick(tns, kt)), stats.Mean(pick(tmean, kt)), stats.Median(pick(tp99, kt))
		c.Defaults.NS, c.Defaults.MeanNS, c.Defaults.P99NS = stats.Median(pick(dns, kd)), stats.Mean(pick(dmean, kd)), stats.Median(pick(dp99, kd))
		c.Ratio, c.LeftOut = stats.Median(c.Ratios), len(tns)-len(kt)+len(dns)-len(kd)
		if c.Tuned.MeanNS > 0 {
			c.MeanRatio = c.Defaults.MeanNS / c.Tuned.MeanNS
		}
		if c.SamePath() {
			v.Noise = max(v.Noise, math.Abs(c.Ratio-1))
		}
		v.Rows = append(v.Rows, c)
	}
	for _, c := range v.Rows {
		if c.SamePath() {
			continue
		}
		v.Differ++
		switch {
		case c.Ratio > 1+v.Noise:
			v.Faster++
		case c.Ratio < 1-v.Noise && c.SlowerRuns >= LostRuns(len(c.Ratios)):
			v.Lost = append(v.Lost, c)
		}
	}
	return v, nil
}

// SlowRun is how much slower than the fastest run of an operation a run
// may be and still count toward its time, as the sampling pass counts its
// blocks: on this shared machine (and host) everything two ranks do takes
// 2–10 times as long for stretches of a few hundred milliseconds, and a
// run caught in one times that, not the paths compared. Runs of one
// operation vary by 5–20% otherwise.
const SlowRun = 1.5

// Steady returns the median of the times within SlowRun of the fastest, and
// how many it left out. The verdict does not use it: it pairs the runs of a
// round, which drift together.
func Steady(ns []float64) (float64, int) {
	kept := steadyRuns(ns)
	return stats.Median(pick(ns, kept)), len(ns) - len(kept)
}

// steadyRuns returns the indices of the times within SlowRun of the
// fastest.
func steadyRuns(ns []float64) []int {
	fastest := slices.Min(ns)
	var kept []int
	for i, x := range ns {
		if x <= SlowRun*fastest {
			kept = append(kept, i)
		}
	}
	return kept
}

// pick returns xs at the indices idx.
func pick(xs []float64, idx []int) []float64 {
	out := make([]float64, len(idx))
	for k, i := range idx {
		out[k] = xs[i]
	}
	return out
}

// LostRuns is how many of runs rounds tuned must lose for a loss to count:
// four in five. A real loss repeats; a noisy one does not.
func LostRuns(runs int) int { return runs - runs/5 }
