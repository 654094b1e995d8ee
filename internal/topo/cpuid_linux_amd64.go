package topo

import (
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// queryCPUID runs the CPUID queries on each of cpus, moving a locked thread
// onto one CPU after the other, as hwloc does: a processor answers for
// itself, and hybrid processors answer differently per core type. A CPU
// this process may not run on (a cgroup cpuset) is left unqueried. APIC ids
// come from /proc/cpuinfo. Processors do not change while a process runs,
// so the answers are kept.
func queryCPUID(cpus []int) ([]cpuidCPU, error) {
	key := FormatCPUList(cpus)
	cpuidCache.mu.Lock()
	defer cpuidCache.mu.Unlock()
	if got, ok := cpuidCache.by[key]; ok {
		return got, nil
	}
	apics, _ := readAPICIDs("/proc/cpuinfo") // unknown: CPUID's own ids
	done := make(chan []cpuidCPU)
	go func() {
		// The thread is never unlocked: its affinity changes below, so it
		// exits with this goroutine rather than return to the scheduler.
		runtime.LockOSThread()
		out := make([]cpuidCPU, 0, len(cpus))
		for _, c := range cpus {
			rec := cpuidCPU{cpu: c, apic: -1}
			if a, ok := apics[c]; ok {
				rec.apic = a
			}
			var set unix.CPUSet
			set.Set(c) // no-op beyond the set's 1024 CPUs: then unqueried
			// For the calling thread the kernel migrates before it returns.
			if set.Count() == 1 && unix.SchedSetaffinity(0, &set) == nil {
				rec.leaves = collectLeaves(cpuid)
			}
			out = append(out, rec)
		}
		done <- out
	}()
	got := <-done
	if cpuidCache.by == nil {
		cpuidCache.by = map[string][]cpuidCPU{}
	}
	cpuidCache.by[key] = got
	return got, nil
}

var cpuidCache struct {
	mu sync.Mutex
	by map[string][]cpuidCPU // by the CPU list queried
}
