package shm

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The futex words live in memory shared between processes, so the calls
// use the shared (not FUTEX_PRIVATE) operations. Go has no wrapper: these
// are raw system calls. Only a producer waiting for ring space sleeps on
// one (briefly, while a large message streams); the consumer, which sleeps
// whenever its process is busy elsewhere, sleeps on its bell (bell_linux.go).
const (
	futexWait = 0 // FUTEX_WAIT
	futexWake = 1 // FUTEX_WAKE
)

// futexSleep blocks while *addr == val, for at most d (d ≤ 0: no limit).
// It may return early (spurious wake-ups, signals): callers re-check.
func futexSleep(addr *atomic.Uint32, val uint32, d time.Duration) {
	var ts *unix.Timespec
	if d > 0 {
		t := unix.NsecToTimespec(int64(d))
		ts = &t
	}
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(val), uintptr(unsafe.Pointer(ts)), 0, 0)
}

// futexWakeAll wakes every process blocked on addr.
func futexWakeAll(addr *atomic.Uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, uintptr(1<<31-1), 0, 0, 0)
}
