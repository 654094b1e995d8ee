package core

import "golang.org/x/sys/unix"

// osYield gives the processor to another runnable thread of the machine,
// if any (sched_yield). It goes through the runtime's system call entry so
// that, should the thread stay off the processor for long, the runtime
// hands its P to another thread.
func osYield() { unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
