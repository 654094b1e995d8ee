package topo

import (
	"cmp"
	"slices"
)

// Seed 004 (Moreaud, RenPar 2009, on KNEM; §3.3 "Choix de la stratégie à
// utiliser") measured when offloading an intra-node copy to the I/OAT DMA
// engine beats copying with the CPU, on Xeon E5345 machines whose 4 MB L2
// caches are each shared by a pair of cores: from about 1 MB between two
// cores under one L2, from about 2 MB between cores that share no cache,
// and 50 % higher with 6 MB L2s. A CPU copy reads the source and writes the
// destination through the cache, so it fills twice the message's size; the
// cache must be at least that big not to lose the data the application
// keeps there, and it is divided among the processes that use it:
//
//	DMA_min = cache size / (2 × processes using the cache)
//
// and, with MPI's usual one process per core,
//
//	DMA_min = cache size / (2 × cores sharing the cache)
//
// Two ranks under a shared 4 MB L2: 4 MB / (2 × 2) = 1 MB. Ranks sharing
// no cache each use their own: 4 MB / (2 × 1) = 2 MB. Both match the
// measurements. commtune has no DMA engine; the threshold marks where a
// copy through the cache starts to cost more than the transfer itself
// (cache pollution), so the shared-memory driver can switch to a method
// that touches fewer cache lines (single copy, non-temporal stores).
//
// §4.2 warns that the rule is a point-to-point one: an 8-process Alltoall
// gained from offload at about 200 KB, because concurrent transfers share
// the caches and the memory bus. Sampling refines it; this is the start.

// DMAMinBasis is what a DMA_min value rests on: the cache seed 004's rule
// divided and by how many, for the placement of the two ranks that gave
// the smallest value.
type DMAMinBasis struct {
	// Bytes is DMA_min in bytes, 0 when the topology cannot say: a CPU
	// with no cache in sysfs, or a cache of unknown size.
	Bytes int64 `json:"bytes"`
	// Cache is the cache the rule divided: the one the ranks share, or the
	// smaller of their two private ones; nil when Bytes is 0.
	Cache *Cache `json:"cache"`
	// Shared reports whether the two ranks share Cache.
	Shared bool `json:"shared"`
	// Users is the divisor's count: the cores (CPUs) sharing Cache when
	// Shared, else 1 since each rank has its private cache to itself.
	Users int `json:"users"`
	// CPUs is the placement, one CPU for each rank, that gave Bytes.
	CPUs [2]int `json:"placement"`
	// LeftOut is a Total cache one of the two CPUs uses: not one
	// instance's size, so the rule cannot divide it, and the ranks may
	// share it or not. Bytes then rests on the caches each rank certainly
	// has (this machine: L3 508M left out, DMA_min from the private 1M L2s).
	LeftOut *Cache `json:"left_out,omitempty"`
}

// DMAMin returns seed 004 §3.3's threshold, in bytes, above which a copy
// between two ranks allowed on CPU sets a and b pollutes the cache more
// than it is worth:
//
//	DMA_min = cache size / (2 × cores sharing the cache)
//
// When the ranks share a data cache, the rule uses the closest one
// (SharedCache) and the number of CPUs sharing it, one rank per CPU. When
// they share none, each rank uses its own largest data cache alone, and
// DMA_min is the smaller of those two caches / 2. The seed's example: two
// ranks under one 4 MB L2 shared by two cores, 1 MB; two ranks on separate
// 4 MB L2s, 2 MB (testdata/e5345 and TestDMAMin hold exactly that machine).
//
// A rank allowed on several CPUs may run on any of them, so DMAMin is the
// smallest value over the placements x in a, y in b with x ≠ y (two busy
// ranks do not share a CPU while another is free; x = y is used only when
// a and b are the same single CPU). It returns 0 when a or b is empty or
// the topology lacks the caches to apply the rule. A Total cache (not one
// instance) is left out: the rule then rests on the caches below it. See
// ExplainDMAMin for the cache and placement behind the value.
func (t *Topology) DMAMin(a, b []int) int64 { return t.ExplainDMAMin(a, b).Bytes }

// ExplainDMAMin is DMAMin with the cache, the divisor and the placement
// that gave the value.
func (t *Topology) ExplainDMAMin(a, b []int) DMAMinBasis {
	// Each CPU's data caches, looked up once: the placements are |a|×|b|.
	own := map[int]cpuCaches{}
	for _, cpus := range [][]int{a, b} {
		for _, x := range cpus {
			if _, done := own[x]; !done {
				own[x] = t.dataCachesOf(x)
			}
		}
	}
	onlySame := sameSingle(a, b)
	var best DMAMinBasis
	for _, x := range a {
		for _, y := range b {
			if x == y && !onlySame {
				continue
			}
			p := placement(own[x], own[y], x, y)
			if p.Bytes == 0 {
				return DMAMinBasis{} // one unknown placement makes the minimum unknown
			}
			if best.Bytes == 0 || p.Bytes < best.Bytes {
				best = p
			}
		}
	}
	return best
}

// sameSingle reports whether a and b both hold the one same CPU, the only
// case where the two ranks have to share it.
func sameSingle(a, b []int) bool {
	for _, x := range a {
		for _, y := range b {
			if x != y {
				return false
			}
		}
	}
	return true
}

// dataCachesOf returns the data and unified caches that CPU x uses, each
// one instance, and the largest Total one it uses (nil if none).
func (t *Topology) dataCachesOf(x int) cpuCaches {
	var cc cpuCaches
	for i := range t.Caches {
		c := &t.Caches[i]
		switch {
		case !c.holdsData() || !containsAll(c.CPUs, []int{x}):
		case c.Total:
			if cc.total == nil || c.Size > cc.total.Size {
				cc.total = c
			}
		default:
			cc.caches = append(cc.caches, c)
		}
	}
	return cc
}

// cpuCaches is what dataCachesOf finds for one CPU.
type cpuCaches struct {
	caches []*Cache
	total  *Cache
}

// placement applies the rule to two ranks pinned on CPUs x and y, whose
// data caches are cx and cy.
func placement(cx, cy cpuCaches, x, y int) DMAMinBasis {
	var shared *Cache
	for _, c := range cx.caches {
		if containsAll(c.CPUs, []int{y}) && closer(c, shared) {
			shared = c
		}
	}
	leftOut := cx.total
	if leftOut == nil || cy.total != nil && cy.total.Size > leftOut.Size {
		leftOut = cy.total
	}
	if shared != nil {
		users := len(shared.CPUs)
		return basis(shared, true, users, shared.Size/int64(2*users), x, y, leftOut)
	}
	px, py := largest(cx.caches), largest(cy.caches)
	if px == nil || py == nil {
		return DMAMinBasis{CPUs: [2]int{x, y}, LeftOut: leftOut}
	}
	c := px
	if py.Size < px.Size {
		c = py
	}
	return basis(c, false, 1, c.Size/2, x, y, leftOut)
}

func basis(c *Cache, shared bool, users int, bytes int64, x, y int, leftOut *Cache) DMAMinBasis {
	if bytes == 0 {
		return DMAMinBasis{CPUs: [2]int{x, y}, LeftOut: leftOut}
	}
	return DMAMinBasis{Bytes: bytes, Cache: c, Shared: shared, Users: users, CPUs: [2]int{x, y}, LeftOut: leftOut}
}

// largest returns the largest cache of cs, the higher level on a tie.
func largest(cs []*Cache) *Cache {
	var best *Cache
	for _, c := range cs {
		if best == nil || c.Size > best.Size || c.Size == best.Size && c.Level > best.Level {
			best = c
		}
	}
	return best
}

// DMAMinGroup is a set of CPU pairs whose DMA_min rests on the same kind
// of cache, shared or private, with the same divisor: on seed 004's E5345,
// the pairs under one L2 form one group (1 MB), all the others another
// (2 MB).
type DMAMinGroup struct {
	DMAMinBasis     // the value and the first pair (CPUs) of the group
	Pairs       int `json:"pairs"` // how many pairs of CPUs
}

// DMAMinPairs applies DMAMin to every pair of distinct CPUs of cpus, as if
// one rank were pinned on each, and groups the pairs by the basis of their
// value, smallest DMA_min first. With a single CPU the one "pair" is both
// ranks on it. Pairs whose value is unknown form a group with Bytes 0.
// Looking each CPU's caches up once, it costs O(len(cpus)²) placements
// rather than as many scans of every cache.
func (t *Topology) DMAMinPairs(cpus []int) []DMAMinGroup {
	own := make([]cpuCaches, len(cpus))
	for i, x := range cpus {
		own[i] = t.dataCachesOf(x)
	}
	type key struct {
		bytes        int64
		shared       bool
		users, level int
		typ          string
		size         int64
		leftOut      bool
	}
	index := map[key]int{}
	var groups []DMAMinGroup
	add := func(p DMAMinBasis) {
		k := key{bytes: p.Bytes, shared: p.Shared, users: p.Users, leftOut: p.LeftOut != nil}
		if p.Cache != nil {
			k.level, k.typ, k.size = p.Cache.Level, p.Cache.Type, p.Cache.Size
		}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, DMAMinGroup{DMAMinBasis: p})
		}
		groups[i].Pairs++
	}
	if len(cpus) == 1 {
		add(placement(own[0], own[0], cpus[0], cpus[0]))
	}
	for i := range cpus {
		for j := i + 1; j < len(cpus); j++ {
			if cpus[i] != cpus[j] {
				add(placement(own[i], own[j], cpus[i], cpus[j]))
			}
		}
	}
	slices.SortStableFunc(groups, func(a, b DMAMinGroup) int { return cmp.Compare(a.Bytes, b.Bytes) })
	return groups
}
