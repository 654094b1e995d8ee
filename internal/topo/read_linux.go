package topo

import (
	"fmt"
	"os"
	"strings"

	"github.com/commtune/commtune/internal/setting"
	"golang.org/x/sys/unix"
)

// Read reads this machine's topology from /sys (or $COMMTUNE_SYSFS). When
// sysfs lists no cache, the caches are decoded from CPUID instead (x86-64;
// see cpuid.go) and CacheSource says so.
func Read() (*Topology, error) {
	v := strings.TrimSpace(os.Getenv(EnvSysfs))
	if v == "" {
		return readWithCPUID("/sys", queryCPUID)
	}
	t, err := readWithCPUID(v, queryCPUID)
	if err != nil {
		// The user pointed here: name the variable, not only the file.
		return nil, setting.Bad(setting.Env(EnvSysfs, v), "the root of a copy of /sys (%w)", err)
	}
	return t, nil
}

// Allowed returns the CPUs this process may run on (sched_getaffinity(2)
// of the calling thread, which a Go program's threads inherit from the
// process): the set taskset, cgroup cpusets and the launcher's pinning
// leave it. It fails on machines with more than the 1024 CPUs unix.CPUSet
// holds.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("topo: sched_getaffinity: %w", err)
	}
	n := set.Count()
	cpus := make([]int, 0, n)
	for c := 0; len(cpus) < n; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
