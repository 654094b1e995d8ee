package core

import "golang.org/x/sys/unix"

// osYield gives the processor to another runnable thread of the machine,
// if any (sched_yield), keeping the runtime's P: through the runtime's
// system call entry, a yield that lasted another process's time slice let
// the runtime hand the P to a new thread, one more runnable thread where
// ranks already outnumber processors (4 ranks on 2 processors, shared
// memory: Alltoall of 8 bytes 17 µs a call, 13 µs without). The waiter
// runs the process's other goroutines itself (runtime.Gosched) every few
// polls.
func osYield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
