package topo

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// String summarizes the topology the way lstopo's console output does: a
// tree of packages, caches, cores and CPUs, each under the smallest object
// that holds all its CPUs, with chains of single children on one line
// ("L2 1M + L1d 32K + Core 0 + CPU 0"); then the NUMA nodes and one line
// per kind of cache. `commtune info --topology` prints it.
func (t *Topology) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s (%s)", plural(len(t.CPUs), "CPU"), orNone(FormatCPUList(t.CPUs)))
	if len(t.Packages) > 0 {
		fmt.Fprintf(&b, ", %s", plural(len(t.Packages), "package"))
	}
	if len(t.Cores) > 0 {
		fmt.Fprintf(&b, ", %s", plural(len(t.Cores), "core"))
	}
	if len(t.NUMA) > 0 {
		fmt.Fprintf(&b, ", %s", plural(len(t.NUMA), "NUMA node"))
	}
	b.WriteByte('\n')
	for _, o := range t.tree().children {
		o.write(&b, 1)
	}
	for _, n := range t.NUMA {
		fmt.Fprintf(&b, "NUMA node %d: CPUs %s\n", n.ID, orNone(FormatCPUList(n.CPUs)))
	}
	t.writeCacheKinds(&b)
	return b.String()
}

// object is a node of String's tree: something that covers a set of CPUs.
type object struct {
	label    string
	cpus     []int
	rank     int // among objects with the same CPUs, the lower rank is the parent
	children []*object
}

// Ranks put a package above its caches, larger caches above smaller ones,
// the data cache above the instruction cache of its level (as lstopo
// does), and caches above the core and the CPU.
const (
	rankPackage = 0
	rankCache   = 1000 // minus 10 × level, plus the type order
	rankCore    = 2000
	rankCPU     = 3000
)

// tree nests every object under the smallest earlier object whose CPUs
// contain its own. Objects whose CPU sets overlap without nesting (a
// sysfs oddity) simply end up higher in the tree.
func (t *Topology) tree() *object {
	var objs []*object
	for _, p := range t.Packages {
		objs = append(objs, &object{label: "Package " + strconv.Itoa(p.ID), cpus: p.CPUs, rank: rankPackage})
	}
	for i := range t.Caches {
		c := &t.Caches[i]
		objs = append(objs, &object{label: c.Name() + " " + FormatSize(c.Size), cpus: c.CPUs, rank: rankCache - 10*c.Level + typeOrder(c.Type)})
	}
	for _, c := range t.Cores {
		objs = append(objs, &object{label: "Core " + strconv.Itoa(c.ID), cpus: c.CPUs, rank: rankCore})
	}
	for _, cpu := range t.CPUs {
		objs = append(objs, &object{label: "CPU " + strconv.Itoa(cpu), cpus: []int{cpu}, rank: rankCPU})
	}
	slices.SortStableFunc(objs, func(a, b *object) int {
		return cmp.Or(cmp.Compare(len(b.cpus), len(a.cpus)), cmp.Compare(a.rank, b.rank), slices.Compare(a.cpus, b.cpus))
	})
	root := &object{}
	for i, o := range objs {
		parent := root
		// Earlier objects are no smaller, so the last one that contains o
		// is the smallest. An object without CPUs belongs nowhere.
		for j := i - 1; j >= 0 && len(o.cpus) > 0; j-- {
			if containsAll(objs[j].cpus, o.cpus) {
				parent = objs[j]
				break
			}
		}
		parent.children = append(parent.children, o)
	}
	for _, o := range append(objs, root) {
		slices.SortStableFunc(o.children, func(a, b *object) int {
			return cmp.Or(cmp.Compare(first(a.cpus), first(b.cpus)), cmp.Compare(a.rank, b.rank))
		})
	}
	return root
}

// write prints o and its subtree at depth, a chain of only children on
// one line.
func (o *object) write(b *strings.Builder, depth int) {
	b.WriteString(strings.Repeat("  ", depth))
	b.WriteString(o.label)
	for len(o.children) == 1 {
		o = o.children[0]
		b.WriteString(" + ")
		b.WriteString(o.label)
	}
	b.WriteByte('\n')
	for _, c := range o.children {
		c.write(b, depth+1)
	}
}

// writeCacheKinds prints where the caches come from, then one line per
// kind of cache: name, size, line size, and how many instances are shared
// by how many CPUs.
func (t *Topology) writeCacheKinds(b *strings.Builder) {
	if len(t.Caches) == 0 {
		if t.CacheNote == "" {
			b.WriteString("Caches: none described\n")
		} else {
			fmt.Fprintf(b, "Caches: none (%s)\n", t.CacheNote)
		}
		return
	}
	type kind struct {
		name       string
		size       int64
		line, cpus int
		total      bool
	}
	var kinds []kind
	count := map[kind]int{}
	for i := range t.Caches {
		c := &t.Caches[i]
		k := kind{c.Name(), c.Size, c.LineSize, len(c.CPUs), c.Total}
		if count[k] == 0 {
			kinds = append(kinds, k)
		}
		count[k]++
	}
	switch t.CacheSource {
	case CachesFromCPUID:
		b.WriteString("Caches from CPUID, as sysfs lists none (size, line, instances × CPUs sharing each):\n")
	case CachesFromSysfs:
		b.WriteString("Caches from sysfs (size, line, instances × CPUs sharing each):\n")
	default:
		b.WriteString("Caches (size, line, instances × CPUs sharing each):\n")
	}
	for _, k := range kinds {
		line := "?"
		if k.line > 0 {
			line = strconv.Itoa(k.line) + "B"
		}
		fmt.Fprintf(b, "  %-4s %5s  %4s  %d × %s", k.name, FormatSize(k.size), line, count[k], plural(k.cpus, "CPU"))
		if k.total {
			b.WriteString("  (a total, not one instance: left out of DMA_min and of cache sharing)")
		}
		b.WriteByte('\n')
	}
}

// FormatSize prints a cache size as the kernel and lstopo do, in the
// largest binary unit that divides it: 32K, 1M, 32M; "?" for 0 (unknown).
func FormatSize(n int64) string {
	switch {
	case n == 0:
		return "?"
	case n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "G"
	case n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "M"
	case n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "K"
	}
	return strconv.FormatInt(n, 10) + "B"
}

// first returns the first CPU of a set, -1 for an empty one (a Topology
// built by hand or decoded from JSON may hold one).
func first(cpus []int) int {
	if len(cpus) == 0 {
		return -1
	}
	return cpus[0]
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
