package memcopy

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// pin locks the benchmark goroutine to its thread and the thread to CPU 0
// until the benchmark ends, so that the working-set passes and the copy
// between them run on one core and see one private L2 cache. Pool workers
// stay free to run on the other CPUs, but every hand-off to or from a
// locked thread costs a thread wake-up, so bandwidth benchmarks do not pin.
func pin(b *testing.B) {
	runtime.LockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		b.Logf("not pinned: %v", err)
		return
	}
	var one unix.CPUSet
	one.Set(0)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		b.Logf("not pinned: %v", err)
	}
	b.Cleanup(func() {
		_ = unix.SchedSetaffinity(0, &old)
		runtime.UnlockOSThread()
	})
}
