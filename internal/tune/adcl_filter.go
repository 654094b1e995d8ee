package tune

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Defaults for a zero FilterConfig field (seed 003 §II-A).
const (
	// DefaultOutlierRatio is FilterConfig.Ratio's default.
	DefaultOutlierRatio = 3.0
	// DefaultOutlierFraction is FilterConfig.MaxFraction's default.
	DefaultOutlierFraction = 0.20
)

// FilterConfig sets ADCL's outlier filter. The zero value is valid: each
// zero field takes its default.
type FilterConfig struct {
	// Ratio makes a sample an outlier when it is at least Ratio times the
	// smallest sample of the same implementation on the same rank (default
	// 3, as in seed 003 §II-A and ADCL_statistics.c). Must exceed 1; +Inf
	// turns the filter off.
	Ratio float64
	// MaxFraction is the largest share of the samples that may be outliers
	// for them to be left out of the mean (default 0.20). Beyond it the
	// slow calls are taken as a property of the implementation, not as
	// noise, and the mean of all samples stands. Must be in (0, 1].
	MaxFraction float64
}

// Validate reports every field outside its range, or nil. Zero fields are
// valid: they take their defaults.
func (c FilterConfig) Validate() error {
	var errs []error
	if math.IsNaN(c.Ratio) || (c.Ratio != 0 && c.Ratio <= 1) {
		errs = append(errs, fmt.Errorf("tune: outlier Ratio %v does not exceed 1", c.Ratio))
	}
	if math.IsNaN(c.MaxFraction) || c.MaxFraction < 0 || c.MaxFraction > 1 {
		errs = append(errs, fmt.Errorf("tune: outlier MaxFraction %v is outside (0, 1]", c.MaxFraction))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field set to its default.
func (c FilterConfig) withDefaults() FilterConfig {
	if c.Ratio == 0 {
		c.Ratio = DefaultOutlierRatio
	}
	if c.MaxFraction == 0 {
		c.MaxFraction = DefaultOutlierFraction
	}
	return c
}

// FilteredMean is ADCL's estimate of one implementation's running time on
// one rank from its samples, in seconds (seed 003 §II-A): a sample at
// least cfg.Ratio times the smallest is an outlier; if outliers are at
// most cfg.MaxFraction of the samples, the mean of the others is returned,
// otherwise the mean of all of them. outliers is the number of outliers
// found, whichever mean was used. Zero fields of cfg take their defaults.
//
// Samples are running times, so non-negative. If the smallest is 0 every
// sample counts as an outlier and the mean of all is returned. With no
// samples the mean is NaN: an implementation never measured must not pass
// for a fast one.
func FilteredMean(samples []float64, cfg FilterConfig) (mean float64, outliers int) {
	n := len(samples)
	if n == 0 {
		return math.NaN(), 0
	}
	cfg = cfg.withDefaults()
	cut := cfg.Ratio * slices.Min(samples) // +Inf·0 is NaN: nothing is an outlier
	var all, kept float64
	for _, x := range samples {
		all += x
		if x >= cut {
			outliers++
		} else {
			kept += x
		}
	}
	// The fraction, not outliers ≤ MaxFraction·n: k/n rounds to the same
	// double as a decimal MaxFraction equal to it, so a boundary such as
	// 29 of 100 against 0.29 is not lost to rounding.
	if outliers < n && float64(outliers)/float64(n) <= cfg.MaxFraction {
		return kept / float64(n-outliers), outliers
	}
	return all / float64(n), outliers
}
