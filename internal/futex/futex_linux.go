package futex

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The words may live in memory shared between processes, so the calls
// use the shared (not FUTEX_PRIVATE) operations.
const (
	futexWait = 0 // FUTEX_WAIT
	futexWake = 1 // FUTEX_WAKE
)

// Sleep blocks while *addr == val, for at most d (d ≤ 0: no limit). It
// may return early (spurious wake-ups, signals): callers look again.
func Sleep(addr *atomic.Uint32, val uint32, d time.Duration) {
	var ts *unix.Timespec
	if d > 0 {
		t := unix.NsecToTimespec(int64(d))
		ts = &t
	}
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(val), uintptr(unsafe.Pointer(ts)), 0, 0)
}

// WakeAll wakes every thread, of any process, blocked on addr.
func WakeAll(addr *atomic.Uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, uintptr(1<<31-1), 0, 0, 0)
}

// Yield gives the processor to another runnable thread of the machine
// (sched_yield). It bypasses the runtime's system call entry: a yield that
// lasts another thread's time slice would otherwise let the runtime hand
// the caller's P to a new thread, one more runnable thread on a machine
// that already has too many (4 ranks on 2 processors: barriers at 12 µs
// mean, p99 71 µs, against 4.5 µs and 11 µs without). Callers run the
// process's other goroutines themselves (runtime.Gosched) now and then.
func Yield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
