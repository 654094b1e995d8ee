//go:build !linux

package shm

import (
	"sync/atomic"
	"time"
)

// futexNap is how long futexSleep naps without a futex to wait on.
const futexNap = 50 * time.Microsecond

// futexSleep stands in for the futex wait where there is none: it naps
// briefly while *addr == val, never longer than d (d ≤ 0: no limit). Its
// callers already re-check after a spurious wake-up, so polling keeps the
// futex contract; New refuses to run off Linux, so only in-process code
// (the ring) can reach it.
func futexSleep(addr *atomic.Uint32, val uint32, d time.Duration) {
	if addr.Load() != val {
		return
	}
	nap := futexNap
	if d > 0 && d < nap {
		nap = d
	}
	time.Sleep(nap)
}

// futexWakeAll has nothing to wake: sleepers poll (futexSleep).
func futexWakeAll(*atomic.Uint32) {}
