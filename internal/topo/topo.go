package topo

import (
	"fmt"
	"slices"
)

// Cache types as sysfs names them (cache/indexK/type).
const (
	Data        = "Data"
	Instruction = "Instruction"
	Unified     = "Unified"
)

// Cache is one cache instance: a cache of one level and type together with
// the set of CPUs that share it. Two CPUs with private L2 caches have two
// L2 instances; CPUs under one L3 have one.
type Cache struct {
	Level int    `json:"level"`
	Type  string `json:"type"` // Data, Instruction or Unified
	// Size is in bytes; 0 when sysfs does not say (some virtual and ARM
	// machines omit cache/indexK/size).
	Size int64 `json:"size"`
	// LineSize is the coherency line size in bytes; 0 when unknown.
	LineSize int   `json:"line_size"`
	CPUs     []int `json:"cpus"` // sorted
	// Total marks a Size that is not one instance's: AMD's legacy CPUID
	// L3 field, which holds the whole processor's L3 (split on family 17h
	// and later among core complexes it does not list), or a size above
	// MaxCacheInstance. Such a cache is shown as reported but left out of
	// DMA_min and of cache sharing, which need one instance's size and
	// CPUs.
	Total bool `json:"total,omitempty"`
}

// Name is the cache's short name as lstopo prints it: L1d, L1i, L2, L3.
func (c *Cache) Name() string {
	switch c.Type {
	case Data:
		return fmt.Sprintf("L%dd", c.Level)
	case Instruction:
		return fmt.Sprintf("L%di", c.Level)
	}
	return fmt.Sprintf("L%d", c.Level)
}

// holdsData reports whether the cache holds data (Data or Unified): the
// caches a memory copy goes through, hence the ones seed 004's rule is
// about.
func (c *Cache) holdsData() bool { return c.Type == Data || c.Type == Unified }

// isInstance reports whether the cache holds data and is one instance
// (not Total): the caches seed 004's rule and cache sharing can use.
func (c *Cache) isInstance() bool { return c.holdsData() && !c.Total }

// Core is one physical core: the CPUs (hardware threads) that share it.
type Core struct {
	Package int   `json:"package"` // physical_package_id; -1 when unknown
	ID      int   `json:"id"`      // core_id, unique within a package only
	CPUs    []int `json:"cpus"`    // sorted
}

// Package is one processor package (socket).
type Package struct {
	ID   int   `json:"id"`
	CPUs []int `json:"cpus"` // sorted
}

// Node is one NUMA node. A memory-only node has no CPUs.
type Node struct {
	ID   int   `json:"id"`
	CPUs []int `json:"cpus"` // sorted
}

// EnvSysfs names the environment variable that makes Read read a copy of
// /sys rooted elsewhere (hwloc's HWLOC_FSROOT plays the same part): a
// simulation of another machine of the same processor, such as this
// machine's tree without its cache directories.
const EnvSysfs = "COMMTUNE_SYSFS"

// Sources of Topology.Caches.
const (
	CachesFromSysfs = "sysfs"
	CachesFromCPUID = "cpuid"
	CachesFromNone  = "none"
)

// Topology is what the machine looks like from the operating system's
// point of view. Cores, Packages and NUMA are empty when sysfs does not
// describe them (no topology/ or node/ directory); Caches is empty when
// neither sysfs nor CPUID describes any.
type Topology struct {
	CPUs []int `json:"cpus"` // online CPUs, sorted
	// Caches holds every cache instance, sorted by level, then type (Data,
	// Instruction, Unified), then first CPU.
	Caches []Cache `json:"caches"`
	// CacheSource says where Caches come from: CachesFromSysfs,
	// CachesFromCPUID (sysfs listed none, as in many virtual machines and
	// containers; Read only) or CachesFromNone.
	CacheSource string `json:"cache_source"`
	// CacheNote says why no source listed a cache; empty otherwise.
	CacheNote string    `json:"cache_note,omitempty"`
	Cores     []Core    `json:"cores"`    // sorted by package, then core id
	Packages  []Package `json:"packages"` // sorted by id
	NUMA      []Node    `json:"numa"`     // sorted by id
}

// SharedCache returns the smallest data or unified cache whose CPU set
// contains every CPU of a and of b: the closest cache through which two
// ranks allowed on a and b can exchange data without going to memory. It
// returns nil when a and b are both empty or no cache holds them all.
// "Smallest" compares levels first, sizes within a level: sizes grow with
// the level on every real machine, and a level whose size sysfs omits (0)
// must not pass for smaller than the one below it. A Total cache is not
// one instance and is never returned.
func (t *Topology) SharedCache(a, b []int) *Cache {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	var best *Cache
	for i := range t.Caches {
		c := &t.Caches[i]
		if !c.isInstance() || !containsAll(c.CPUs, a) || !containsAll(c.CPUs, b) {
			continue
		}
		if closer(c, best) {
			best = c
		}
	}
	return best
}

// Sharing is whether two ranks share a data cache, as far as the topology
// can tell.
type Sharing int

const (
	// SharingUnknown: some CPU has no data cache listed, or uses a Total
	// cache, whose instances (and so who shares them) are unknown.
	SharingUnknown Sharing = iota
	// SharingNone: every cache of both is a known instance, none holds both.
	SharingNone
	// SharingCache: SharedCache finds one.
	SharingCache
)

func (s Sharing) String() string {
	switch s {
	case SharingNone:
		return "none"
	case SharingCache:
		return "shared"
	}
	return "unknown"
}

// Sharing says whether ranks allowed on the CPU sets a and b share a data
// cache. It is what the shared-memory transport's method rule needs: seed
// 004 §4.1 copies twice when the ranks share a cache and copies once when
// they do not, and "not listed" must not pass for "not shared".
func (t *Topology) Sharing(a, b []int) Sharing {
	if len(a) == 0 || len(b) == 0 {
		return SharingUnknown
	}
	if t.SharedCache(a, b) != nil {
		return SharingCache
	}
	for _, cpus := range [][]int{a, b} {
		for _, x := range cpus {
			listed := false
			for i := range t.Caches {
				c := &t.Caches[i]
				if !c.holdsData() || !containsAll(c.CPUs, []int{x}) {
					continue
				}
				if c.Total {
					return SharingUnknown
				}
				listed = true
			}
			if !listed {
				return SharingUnknown
			}
		}
	}
	return SharingNone
}

// containsAll reports whether the sorted set holds every CPU of cpus.
func containsAll(set, cpus []int) bool {
	for _, c := range cpus {
		if _, ok := slices.BinarySearch(set, c); !ok {
			return false
		}
	}
	return true
}

// closer reports whether c is closer to the CPUs than best (nil: none
// yet): a lower level, or a smaller size at the same level.
func closer(c, best *Cache) bool {
	return best == nil || c.Level < best.Level || c.Level == best.Level && c.Size < best.Size
}
