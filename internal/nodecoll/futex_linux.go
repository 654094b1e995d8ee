package nodecoll

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The words live in memory processes share: the shared (not
// FUTEX_PRIVATE) operations.
const (
	futexWait = 0 // FUTEX_WAIT
	futexWake = 1 // FUTEX_WAKE
)

// futexSleep blocks while *addr == val, for at most d; it may return
// early (callers look again).
func futexSleep(addr *atomic.Uint32, val uint32, d time.Duration) {
	t := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(val), uintptr(unsafe.Pointer(&t)), 0, 0)
}

// futexWakeAll wakes every process blocked on addr.
func futexWakeAll(addr *atomic.Uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, uintptr(1<<31-1), 0, 0, 0)
}

// osYield gives the processor to another runnable thread of the machine.
func osYield() { unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
