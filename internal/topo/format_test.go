package topo

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct {
		name string
		topo *Topology
		want string
	}{
		{"epyc2", epyc2, `
Machine: 2 CPUs (0-1), 1 package, 2 cores, 1 NUMA node
  Package 0 + L3 32M
    L2 1M + L1d 32K + L1i 32K + Core 0 + CPU 0
    L2 1M + L1d 32K + L1i 32K + Core 1 + CPU 1
NUMA node 0: CPUs 0-1
Caches from sysfs (size, line, instances × CPUs sharing each):
  L1d    32K   64B  2 × 1 CPU
  L1i    32K   64B  2 × 1 CPU
  L2      1M   64B  2 × 1 CPU
  L3     32M   64B  1 × 2 CPUs
`},
		{"e5345", e5345, `
Machine: 8 CPUs (0-7), 2 packages, 8 cores
  Package 0
    L2 4M
      L1d 32K + L1i 32K + Core 0 + CPU 0
      L1d 32K + L1i 32K + Core 1 + CPU 4
    L2 4M
      L1d 32K + L1i 32K + Core 2 + CPU 2
      L1d 32K + L1i 32K + Core 3 + CPU 6
  Package 1
    L2 4M
      L1d 32K + L1i 32K + Core 0 + CPU 1
      L1d 32K + L1i 32K + Core 1 + CPU 5
    L2 4M
      L1d 32K + L1i 32K + Core 2 + CPU 3
      L1d 32K + L1i 32K + Core 3 + CPU 7
Caches from sysfs (size, line, instances × CPUs sharing each):
  L1d    32K   64B  8 × 1 CPU
  L1i    32K   64B  8 × 1 CPU
  L2      4M   64B  4 × 2 CPUs
`},
		{"minimal", minimal, `
Machine: 2 CPUs (0-1)
  L2 ? + CPU 0
  CPU 1
Caches from sysfs (size, line, instances × CPUs sharing each):
  L2       ?     ?  1 × 1 CPU
`},
		{"caches from CPUID", zen5VM, `
Machine: 2 CPUs (0-1), 1 package, 2 cores, 1 NUMA node
  Package 0
    L3 508M + L2 1M + L1d 48K + L1i 32K + Core 0 + CPU 0
    L3 508M + L2 1M + L1d 48K + L1i 32K + Core 1 + CPU 1
NUMA node 0: CPUs 0-1
Caches from CPUID, as sysfs lists none (size, line, instances × CPUs sharing each):
  L1d    48K   64B  2 × 1 CPU
  L1i    32K   64B  2 × 1 CPU
  L2      1M   64B  2 × 1 CPU
  L3    508M   64B  2 × 1 CPU  (a total, not one instance: left out of DMA_min and of cache sharing)
`},
		{"no cache anywhere", &Topology{CPUs: []int{0}, CacheSource: CachesFromNone, CacheNote: "sysfs lists no cache; CPUID: CPUID is read on x86-64 Linux only"}, `
Machine: 1 CPU (0)
  CPU 0
Caches: none (sysfs lists no cache; CPUID: CPUID is read on x86-64 Linux only)
`},
		{"empty", &Topology{}, `
Machine: 0 CPUs (none)
Caches: none described
`},
		// Built by hand (or decoded from JSON): a cache with no CPUs, a
		// memory-only node and sets that overlap without nesting must
		// print, not panic.
		{"odd", &Topology{
			CPUs: []int{0, 1, 2},
			Caches: []Cache{
				{Level: 2, Type: Unified, Size: 1000, CPUs: []int{0, 1}},
				{Level: 2, Type: Unified, Size: 1000, CPUs: []int{1, 2}},
				{Level: 3, Type: Data, Size: 1 << 30},
			},
			NUMA: []Node{{ID: 1}},
		}, `
Machine: 3 CPUs (0-2), 1 NUMA node
  L3d 1G
  L2 1000B + CPU 0
  L2 1000B
    CPU 1
    CPU 2
NUMA node 1: CPUs none
Caches (size, line, instances × CPUs sharing each):
  L2   1000B     ?  2 × 2 CPUs
  L3d     1G     ?  1 × 0 CPUs
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := strings.TrimPrefix(tc.want, "\n")
			if got := tc.topo.String(); got != want {
				t.Fatalf("String() =\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "?"}, {64, "64B"}, {1536, "1536B"}, {32 << 10, "32K"}, {1 << 20, "1M"},
		{1536 << 10, "1536K"}, {32 << 20, "32M"}, {2 << 30, "2G"},
	}
	for _, tc := range tests {
		if got := FormatSize(tc.n); got != tc.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
