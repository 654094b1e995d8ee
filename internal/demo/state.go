package demo

import (
	"math"

	"github.com/commtune/commtune/internal/profile"
)

// Reference returns the time the profile's own memcpy curve gives a copy of
// CopyProbeSize bytes: how fast the machine moved memory while it was
// sampled, to hold each run's CopyProbe against.
func Reference(p *profile.Profile) (float64, bool) {
	c := p.Host[profile.Memcpy]
	if len(c) == 0 {
		return 0, false
	}
	return c.At(CopyProbeSize), true
}

// Drift is how far apart two states of the machine are: the ratio of two
// copy probes, larger over smaller (1: the same).
func Drift(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return math.Inf(1)
	}
	return max(a/b, b/a)
}

// InState reports whether a round whose two runs' probes are tuned and
// defaults ran in the state the profile was sampled in (reference): both
// within SlowRun of it, the rule the sampling pass and Steady apply to
// blocks and runs. A round outside it compares the configurations in a
// state the profile does not describe: its verdict would be about another
// machine.
func InState(tuned, defaults, reference float64) bool {
	return Drift(tuned, reference) <= SlowRun && Drift(defaults, reference) <= SlowRun
}
