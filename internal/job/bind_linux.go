package job

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/topo"
)

// bindProcess binds every thread of this process to cpu: the kernel sets
// affinity per thread, and threads the runtime starts later inherit it
// from the thread that starts them.
func bindProcess(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("binding to processor %d: %w", cpu, err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// A thread that ended meanwhile is no error.
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("binding thread %d to processor %d: %w", tid, cpu, err)
		}
	}
	return nil
}

// bindRank binds this rank as cfg.Bind says, and returns the processor,
// or -1 when it stays unbound. A failure leaves it unbound: binding is a
// matter of speed, never of correctness.
func bindRank(cfg config.Config, localRank, localRanks int) int {
	allowed, err := topo.Allowed()
	if err != nil {
		return -1
	}
	cpu := bindCPU(cfg.Bind, localRank, localRanks, allowed)
	if cpu < 0 || bindProcess(cpu) != nil {
		return -1
	}
	return cpu
}
