package topo

import "fmt"

// readWithCPUID is Read with the sysfs root and the CPUID source given.
func readWithCPUID(root string, query func([]int) ([]cpuidCPU, error)) (*Topology, error) {
	t, err := ReadFrom(root)
	if err != nil || len(t.Caches) > 0 {
		return t, err
	}
	cpus, err := query(t.CPUs)
	var caches []Cache
	if err == nil {
		caches, err = decodeCPUID(cpus)
	}
	switch {
	case err != nil:
		t.CacheNote = fmt.Sprintf("sysfs lists no cache; CPUID: %v", err)
	case len(caches) == 0:
		t.CacheNote = "sysfs lists no cache; neither does CPUID"
	default:
		t.Caches, t.CacheSource, t.CacheNote = caches, CachesFromCPUID, ""
		markTotals(t.Caches)
	}
	return t, nil
}

// MaxCacheInstance is the largest size taken as one cache instance's: twice
// the largest single cache shipped (Xeon 6980P's 504 MB L3). A hypervisor
// may report more; such a cache is marked Total.
const MaxCacheInstance = 1 << 30

// markTotals marks caches too large to be one instance (MaxCacheInstance).
func markTotals(caches []Cache) {
	for i := range caches {
		if caches[i].Size > MaxCacheInstance {
			caches[i].Total = true
		}
	}
}
