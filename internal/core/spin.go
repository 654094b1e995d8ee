package core

import (
	"sync/atomic"
	"time"
)

// spinPolicy is how long a waiter polls before parking, and how waits
// ended. Polling wins when the answer comes within microseconds and the
// rank has a processor to itself: measured here on loopback TCP, 8-byte
// ping-pong takes 5.6 µs polling against 9.4 µs for raw blocking TCP and
// ~25 µs parking. It loses badly when ranks outnumber processors (4 ranks
// on 2 cores passing a token: 135 µs per hop polling, 39 µs parking), so
// the public layer turns it off then (Config.SpinWait).
//
// The budget is fixed on purpose. A budget that shrank after waits
// outlasting it made 8-byte ping-pong bimodal (0.6× or 2.4× raw TCP from
// run to run): once both ranks park, the kernel tends to keep them on one
// processor (a woken thread is placed near its waker) and every wait then
// costs wake-ups, which look like more misses. Polling threads stay busy,
// so the kernel's balancer separates them.
//
// With yield set (ranks outnumber processors), a poll that finds nothing
// hands the processor to whoever else is runnable on it (sched_yield):
// parking instead costs a futex wake-up per hop, and on this kind of
// machine 4 ranks on 2 processors then took 340–460 µs per barrier, where
// Open MPI, which yields, takes 11 µs.
type spinPolicy struct {
	max                  int64 // nanoseconds; ≤ 0: never poll
	yield                bool
	hits, misses, parked atomic.Uint64
}

func newSpinPolicy(max time.Duration, yield bool) *spinPolicy {
	return &spinPolicy{max: int64(max), yield: yield}
}

// next returns the polling budget for a wait about to begin.
func (p *spinPolicy) next() time.Duration {
	if p.max <= 0 {
		return 0
	}
	return time.Duration(p.max)
}

// report counts how a wait with budget d ended: done while polling or not.
func (p *spinPolicy) report(d time.Duration, done bool) {
	switch {
	case d <= 0:
		p.parked.Add(1)
	case done:
		p.hits.Add(1)
	default:
		p.misses.Add(1)
	}
}

// counts returns the hits, misses and parked waits so far.
func (p *spinPolicy) counts() (hits, misses, parked uint64) {
	return p.hits.Load(), p.misses.Load(), p.parked.Load()
}

// SpinWait returns how long a waiter polls before it sleeps (0: it never
// polls) and whether it yields the processor after each empty poll: what
// code that waits without a request (a shared-memory collective) follows.
func (e *Engine) SpinWait() (time.Duration, bool) {
	return time.Duration(max(e.spin.max, 0)), e.spin.yield
}
