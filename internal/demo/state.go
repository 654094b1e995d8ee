package demo

import (
	"math"

	"github.com/commtune/commtune/internal/profile"
)

// Reference returns what profile p predicts for StateProbe's message over
// transport: the state the machine was sampled in, to hold each run's
// probe against.
func Reference(p *profile.Profile, transport string) (float64, bool) {
	d, err := p.Predict(transport, ProbePath, ProbeSize)
	if err != nil || d <= 0 {
		return 0, false
	}
	return float64(d), true
}

// Drift is how far apart two states of the machine are: the ratio of two
// probes' times, larger over smaller (1: the same).
func Drift(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return math.Inf(1)
	}
	return max(a/b, b/a)
}

// InState reports whether a round whose two runs' probes (StateProbe) are
// tuned and defaults ran in the state the profile was sampled in
// (reference): both within SlowRun of it, either way. A round outside it
// compares the configurations in a state the profile does not describe:
// its verdict would be about another machine.
func InState(tuned, defaults, reference float64) bool {
	return Drift(tuned, reference) <= SlowRun && Drift(defaults, reference) <= SlowRun
}
