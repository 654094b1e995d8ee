package topo

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestSharedCache(t *testing.T) {
	tests := []struct {
		name string
		topo *Topology
		a, b []int
		want string // Name and CPUs of the cache, "" for nil
	}{
		{"epyc same CPU", epyc2, []int{0}, []int{0}, "L1d 0"},
		{"epyc two CPUs", epyc2, []int{0}, []int{1}, "L3 0-1"},
		{"epyc unpinned", epyc2, []int{0, 1}, []int{0, 1}, "L3 0-1"},
		{"e5345 L2 pair", e5345, []int{0}, []int{4}, "L2 0,4"},
		{"e5345 L2 pair unpinned", e5345, []int{0, 4}, []int{4, 0}, "L2 0,4"},
		{"e5345 same package, other L2", e5345, []int{0}, []int{2}, ""},
		{"e5345 other package", e5345, []int{0}, []int{1}, ""},
		{"one side empty", e5345, nil, []int{3}, "L1d 3"},
		{"both empty", e5345, nil, nil, ""},
		{"unknown CPU", e5345, []int{0}, []int{99}, ""},
		{"no caches", &Topology{CPUs: []int{0, 1}}, []int{0}, []int{1}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if c := tc.topo.SharedCache(tc.a, tc.b); c != nil {
				got = c.Name() + " " + FormatCPUList(c.CPUs)
			}
			if got != tc.want {
				t.Fatalf("SharedCache(%v, %v) = %q, want %q", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

// TestSharing: "not listed" and "a total whose instances are unknown"
// must not pass for "not shared".
func TestSharing(t *testing.T) {
	tests := []struct {
		name string
		topo *Topology
		a, b []int
		want Sharing
	}{
		{"epyc2 under one L3", epyc2, []int{0}, []int{1}, SharingCache},
		{"e5345 under one L2", e5345, []int{0}, []int{4}, SharingCache},
		{"e5345 apart", e5345, []int{0}, []int{1}, SharingNone},
		{"zen5 VM: L3 a total", zen5VM, []int{0}, []int{1}, SharingUnknown},
		{"zen5 VM, same CPU", zen5VM, []int{0}, []int{0}, SharingCache},
		{"no caches", &Topology{CPUs: []int{0, 1}}, []int{0}, []int{1}, SharingUnknown},
		{"one CPU without caches", minimal, []int{0}, []int{1}, SharingUnknown},
		{"a rank's CPUs unknown", e5345, nil, []int{1}, SharingUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.topo.Sharing(tc.a, tc.b); got != tc.want {
				t.Fatalf("Sharing(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
			if got := tc.topo.Sharing(tc.b, tc.a); got != tc.want {
				t.Fatalf("Sharing(%v, %v) = %v, not symmetric", tc.b, tc.a, got)
			}
		})
	}
}

// TestDMAMin checks seed 004 §3.3's rule, first on the seed's own example
// (testdata/e5345: two ranks under a shared 4 MB L2 → 1 MB, on separate
// 4 MB L2s → 2 MB), then on this machine and on degenerate topologies.
func TestDMAMin(t *testing.T) {
	const K, M = 1 << 10, 1 << 20
	// Private caches of different sizes: the smaller one bounds DMA_min.
	uneven := &Topology{CPUs: []int{0, 1}, Caches: []Cache{
		{Level: 2, Type: Unified, Size: 4 * M, CPUs: []int{0}},
		{Level: 2, Type: Unified, Size: 1 * M, CPUs: []int{1}},
		{Level: 1, Type: Instruction, Size: 64 * M, CPUs: []int{0}}, // no data: ignored
	}}
	tests := []struct {
		name  string
		topo  *Topology
		a, b  []int
		want  int64
		basis string // cache name, shared or private, users, placement
	}{
		// The seed's example, exactly.
		{"seed: shared 4 MB L2", e5345, []int{0}, []int{4}, 1 * M, "L2 shared 2 [0 4]"},
		{"seed: separate 4 MB L2s, same package", e5345, []int{0}, []int{2}, 2 * M, "L2 private 1 [0 2]"},
		{"seed: separate 4 MB L2s, other package", e5345, []int{0}, []int{1}, 2 * M, "L2 private 1 [0 1]"},
		// Unpinned ranks: the worst placement counts.
		{"e5345 unpinned on one L2", e5345, []int{0, 4}, []int{0, 4}, 1 * M, "L2 shared 2 [0 4]"},
		{"e5345 unpinned on one package", e5345, []int{0, 2, 4, 6}, []int{0, 2, 4, 6}, 1 * M, "L2 shared 2 [0 4]"},
		{"e5345 pinned to two packages", e5345, []int{0, 2}, []int{1, 3}, 2 * M, "L2 private 1 [0 1]"},
		// Both ranks forced onto one CPU share its L1d.
		{"e5345 same CPU", e5345, []int{3}, []int{3}, 16 * K, "L1d shared 1 [3 3]"},
		// This machine: L3 of 32 MiB shared by 2 CPUs → 8 MiB.
		{"epyc pinned", epyc2, []int{0}, []int{1}, 8 * M, "L3 shared 2 [0 1]"},
		{"epyc unpinned", epyc2, []int{0, 1}, []int{0, 1}, 8 * M, "L3 shared 2 [0 1]"},
		{"uneven private caches", uneven, []int{0}, []int{1}, 512 * K, "L2 private 1 [0 1]"},
		// This machine as CPUID describes it: the 508M L3 is the host
		// processor's total, left out; each rank has its 1M L2 alone.
		{"zen5 VM, L3 a total", zen5VM, []int{0}, []int{1}, 512 * K, "L2 private 1 [0 1] left out L3 508M"},
		{"zen5 VM unpinned", zen5VM, []int{0, 1}, []int{0, 1}, 512 * K, "L2 private 1 [0 1] left out L3 508M"},
		// Unknown: 0.
		{"empty set", e5345, nil, []int{1}, 0, ""},
		{"unknown CPU", e5345, []int{0}, []int{99}, 0, ""},
		{"one unknown placement", e5345, []int{0, 99}, []int{4}, 0, ""},
		{"cache of unknown size", minimal, []int{0}, []int{0}, 0, ""},
		{"CPU without caches", minimal, []int{0}, []int{1}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.topo.DMAMin(tc.a, tc.b); got != tc.want {
				t.Fatalf("DMAMin(%v, %v) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
			b := tc.topo.ExplainDMAMin(tc.a, tc.b)
			got := ""
			if b.Cache != nil {
				kind := "private"
				if b.Shared {
					kind = "shared"
				}
				got = fmt.Sprintf("%s %s %d %v", b.Cache.Name(), kind, b.Users, b.CPUs)
			}
			if b.LeftOut != nil {
				got += fmt.Sprintf(" left out %s %s", b.LeftOut.Name(), FormatSize(b.LeftOut.Size))
			}
			if got != tc.basis {
				t.Fatalf("ExplainDMAMin(%v, %v) rests on %q, want %q", tc.a, tc.b, got, tc.basis)
			}
			if b.Cache != nil && b.Bytes != b.Cache.Size/int64(2*b.Users) {
				t.Fatalf("ExplainDMAMin(%v, %v) = %d bytes, not %s's %d / (2 × %d)", tc.a, tc.b, b.Bytes, b.Cache.Name(), b.Cache.Size, b.Users)
			}
			// The rule is symmetric in the two ranks.
			if rev := tc.topo.DMAMin(tc.b, tc.a); rev != tc.want {
				t.Fatalf("DMAMin(%v, %v) = %d but DMAMin(%v, %v) = %d", tc.b, tc.a, rev, tc.a, tc.b, tc.want)
			}
			if b.Cache != nil && (!slices.Contains(tc.a, b.CPUs[0]) || !slices.Contains(tc.b, b.CPUs[1])) {
				t.Fatalf("placement %v is not in %v × %v", b.CPUs, tc.a, tc.b)
			}
		})
	}
}

func TestDMAMinPairs(t *testing.T) {
	tests := []struct {
		name string
		topo *Topology
		cpus []int
		want string // per group: bytes, cache, shared or private, users, pairs, first pair
	}{
		// The seed's machine: 4 pairs under a shared L2, 24 on separate L2s.
		{"e5345", e5345, e5345.CPUs, "1048576 L2 shared 2 4 [0 4]; 2097152 L2 private 1 24 [0 1]"},
		{"e5345 one package", e5345, []int{0, 2, 4, 6}, "1048576 L2 shared 2 2 [0 4]; 2097152 L2 private 1 4 [0 2]"},
		{"epyc2", epyc2, []int{0, 1}, "8388608 L3 shared 2 1 [0 1]"},
		{"one CPU", epyc2, []int{1}, "16384 L1d shared 1 1 [1 1]"},
		{"unknown", minimal, []int{0, 1}, "0 - - 0 1 [0 1]"},
		{"zen5 VM", zen5VM, []int{0, 1}, "524288 L2 private 1 1 [0 1]"},
		{"none", epyc2, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var parts []string
			for _, g := range tc.topo.DMAMinPairs(tc.cpus) {
				name, kind := "-", "-"
				if g.Cache != nil {
					name, kind = g.Cache.Name(), "private"
					if g.Shared {
						kind = "shared"
					}
				}
				parts = append(parts, fmt.Sprintf("%d %s %s %d %d %v", g.Bytes, name, kind, g.Users, g.Pairs, g.CPUs))
			}
			if got := strings.Join(parts, "; "); got != tc.want {
				t.Fatalf("DMAMinPairs(%v) = %q, want %q", tc.cpus, got, tc.want)
			}
		})
	}
}
