package core

import (
	"sync/atomic"
	"time"
)

// spinPolicy decides how long a waiter polls before parking. Polling wins
// when the answer comes within a few microseconds and this rank has a
// processor to itself; it loses badly when ranks (or anything else) compete
// for processors, since a polling waiter then takes the processor the rank
// it waits for needs (measured here, 4 ranks on 2 cores passing a token:
// 135 µs per hop polling, 39 µs parking). So the budget adapts: a wait that
// ends while polling doubles it (up to the configured SpinWait), one that
// outlasts it halves it; below minSpin the waiter parks at once, trying a
// full budget now and then (less often after each failure) so that polling
// resumes when the machine quiets down.
type spinPolicy struct {
	max    int64 // nanoseconds; ≤ 0: never poll
	budget atomic.Int64
	waits  atomic.Uint64
	probe  atomic.Uint64 // waits between probes while the budget is exhausted
}

const (
	minSpin    = int64(2 * time.Microsecond)
	probeFirst = 16
	probeMax   = 4096
)

func newSpinPolicy(max time.Duration) *spinPolicy {
	p := &spinPolicy{max: int64(max)}
	p.budget.Store(p.max)
	p.probe.Store(probeFirst)
	return p
}

// next returns the budget for a wait about to begin.
func (p *spinPolicy) next() time.Duration {
	if p.max <= 0 {
		return 0
	}
	b := p.budget.Load()
	if b >= minSpin {
		return time.Duration(b)
	}
	if p.waits.Add(1)%p.probe.Load() == 0 {
		return time.Duration(p.max) // probe
	}
	return 0
}

// report tells how a wait with budget d ended: done while polling or not.
func (p *spinPolicy) report(d time.Duration, done bool) {
	if d <= 0 {
		return
	}
	b := p.budget.Load()
	if done {
		p.budget.Store(min(p.max, max(2*b, minSpin)))
		p.probe.Store(probeFirst)
		return
	}
	if b /= 2; b < minSpin {
		b = 0
		if d == time.Duration(p.max) { // a probe failed: probe less often
			p.probe.Store(min(probeMax, 2*p.probe.Load()))
		}
	}
	p.budget.Store(b)
}
