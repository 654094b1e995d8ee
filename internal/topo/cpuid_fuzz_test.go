package topo

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/fuzzseed"
)

// fuzzLeaves encodes a machine for FuzzDecodeCPUID: one byte per CPU's
// APIC id after a count byte, then 24-byte records (leaf, subleaf, EAX,
// EBX, ECX, EDX, little-endian) that every CPU answers.
func fuzzLeaves(l leaves, apics ...byte) []byte {
	b := append([]byte{byte(len(apics))}, apics...)
	keys := slices.SortedFunc(maps.Keys(l), func(a, b leafKey) int {
		if a.leaf != b.leaf {
			return int(int64(a.leaf) - int64(b.leaf))
		}
		return int(int64(a.sub) - int64(b.sub))
	})
	for _, k := range keys {
		r := l[k]
		for _, v := range []uint32{k.leaf, k.sub, r.eax, r.ebx, r.ecx, r.edx} {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
	}
	return b
}

// unfuzzLeaves is fuzzLeaves' inverse; a short tail is ignored.
func unfuzzLeaves(b []byte) []cpuidCPU {
	if len(b) == 0 {
		return nil
	}
	n := min(int(b[0]), len(b)-1, 16)
	apics, rest := b[1:1+n], b[1+n:]
	l := leaves{}
	for ; len(rest) >= 24; rest = rest[24:] {
		u := func(i int) uint32 { return binary.LittleEndian.Uint32(rest[4*i:]) }
		l[leafKey{u(0), u(1)}] = regs{u(2), u(3), u(4), u(5)}
	}
	cpus := make([]cpuidCPU, n)
	for i := range cpus {
		cpus[i] = cpuidCPU{cpu: i, apic: int(apics[i]), leaves: l}
	}
	return cpus
}

// FuzzDecodeCPUID: whatever a hypervisor answers, the decoder returns an
// error or caches that make sense — levels 1-7, sizes within bounds,
// sorted CPU sets of CPUs it was given — and never panics.
func FuzzDecodeCPUID(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		cpus := unfuzzLeaves(data)
		caches, err := decodeCPUID(cpus)
		if err != nil {
			return
		}
		for _, c := range caches {
			if c.Level < 1 || c.Level > 7 || c.Size <= 0 || c.Size > maxCacheSize || c.LineSize < 0 || c.LineSize > 4096 ||
				len(c.CPUs) == 0 || !slices.IsSorted(c.CPUs) || c.CPUs[len(c.CPUs)-1] >= len(cpus) {
				t.Fatalf("decoded an impossible cache %+v from %d CPUs", c, len(cpus))
			}
		}
	})
}

// FuzzParseAPICIDs: /proc/cpuinfo parses to CPU → APIC id pairs in range,
// or an error; never a panic.
func FuzzParseAPICIDs(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := parseAPICIDs(strings.NewReader(s))
		if err != nil {
			return
		}
		for cpu, apic := range ids {
			if cpu < 0 || cpu > MaxCPU || apic < 0 {
				t.Fatalf("parsed CPU %d with APIC id %d", cpu, apic)
			}
		}
	})
}

// TestCPUIDFuzzSeeds keeps testdata/fuzz/FuzzDecodeCPUID (the recordings)
// and FuzzParseAPICIDs in step (go test -run CPUIDFuzzSeeds
// -rewrite-seeds).
func TestCPUIDFuzzSeeds(t *testing.T) {
	var seeds []fuzzseed.Seed
	for i, name := range []string{"xeon-e5-2600-sandybridge.txt", "fx-8300-piledriver.txt", "epyc-7r13-milan-firecracker.txt", "epyc-zen5-firecracker.txt"} {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed-%02d", i), Values: []any{fuzzLeaves(readDump(t, name), 0, 1, 2, 3)}})
	}
	seeds = append(seeds, fuzzseed.Seed{Name: "seed-04", Values: []any{[]byte{}}})
	fuzzseed.Sync(t, "FuzzDecodeCPUID", seeds)
	seeds = nil
	for i, s := range []string{
		"processor\t: 0\napicid\t\t: 0\n\nprocessor\t: 1\napicid\t\t: 1\n",
		"processor : 0\nBogoMIPS : 50.00\n",
		"apicid : 3\n", "processor : 0\napicid : 2147483648\n", "processor : -1\n", "",
	} {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed-%02d", i), Values: []any{s}})
	}
	fuzzseed.Sync(t, "FuzzParseAPICIDs", seeds)
}
