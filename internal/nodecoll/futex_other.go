//go:build !linux

package nodecoll

import (
	"runtime"
	"sync/atomic"
	"time"
)

// futexSleep naps where there is no futex (goroutine ranks only: parts
// shared between processes need Linux).
func futexSleep(addr *atomic.Uint32, val uint32, d time.Duration) {
	if addr.Load() == val {
		time.Sleep(min(d, 50*time.Microsecond))
	}
}

// futexWakeAll has nothing to wake: sleepers nap.
func futexWakeAll(*atomic.Uint32) {}

func osYield() { runtime.Gosched() }
