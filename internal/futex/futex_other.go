//go:build !linux

package futex

import (
	"runtime"
	"sync/atomic"
	"time"
)

// nap is how long Sleep naps without a futex to wait on.
const nap = 50 * time.Microsecond

// Sleep stands in for the futex wait where there is none: it naps
// briefly while *addr == val, never longer than d (d ≤ 0: no limit).
func Sleep(addr *atomic.Uint32, val uint32, d time.Duration) {
	if addr.Load() != val {
		return
	}
	n := nap
	if d > 0 && d < n {
		n = d
	}
	time.Sleep(n)
}

// WakeAll has nothing to wake: sleepers nap.
func WakeAll(*atomic.Uint32) {}

// Yield yields to the Go scheduler.
func Yield() { runtime.Gosched() }
