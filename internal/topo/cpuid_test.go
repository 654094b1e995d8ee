package topo

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/topo/topotest"
)

// readDump reads a `cpuid -r` recording of one CPU (testdata/cpuid):
// lines "0xLEAF 0xSUB: eax=0x… ebx=0x… ecx=0x… edx=0x…", # comments.
func readDump(t testing.TB, name string) leaves {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "cpuid", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l := leaves{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var k leafKey
		var r regs
		if _, err := fmt.Sscanf(line, "0x%x 0x%x: eax=0x%x ebx=0x%x ecx=0x%x edx=0x%x", &k.leaf, &k.sub, &r.eax, &r.ebx, &r.ecx, &r.edx); err != nil {
			t.Fatalf("%s: %q: %v", name, line, err)
		}
		l[k] = r
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return l
}

// machine gives every CPU the same recorded answers (the processors of one
// machine are alike) and the kernel's APIC ids.
func machine(l leaves, apics ...int) []cpuidCPU {
	cpus := make([]cpuidCPU, len(apics))
	for i, a := range apics {
		cpus[i] = cpuidCPU{cpu: i, apic: a, leaves: l}
	}
	return cpus
}

// kinds renders caches one line per kind, in order: "L2 256K 64B: 0,16
// 1,17" lists the instances' CPU sets; " total" ends a Total kind.
func kinds(caches []Cache) []string {
	var out []string
	last := ""
	for _, c := range caches {
		k := fmt.Sprintf("%s %s %dB", c.Name(), FormatSize(c.Size), c.LineSize)
		if c.Total {
			k += " total"
		}
		if k != last {
			out = append(out, k+":")
			last = k
		}
		out[len(out)-1] += " " + FormatCPUList(c.CPUs)
	}
	return out
}

// The APIC ids Linux gives a two-socket Sandy Bridge-EP with 8 cores and 2
// threads each: CPUs 0-7 are package 0's first threads (APIC ids 0, 2 …
// 14), 8-15 package 1's (32 … 46), 16-31 the second threads.
var snbEPAPICs = func() []int {
	var ids []int
	for _, thread := range []int{0, 1} {
		for _, pkg := range []int{0, 32} {
			for core := range 8 {
				ids = append(ids, pkg+core<<1+thread)
			}
		}
	}
	return ids
}()

const snbEPCores = "0,16 1,17 2,18 3,19 4,20 5,21 6,22 7,23 8,24 9,25 10,26 11,27 12,28 13,29 14,30 15,31"

func TestDecodeCPUID(t *testing.T) {
	milan := func(t testing.TB) leaves { return readDump(t, "epyc-7r13-milan-firecracker.txt") }
	tests := []struct {
		name string
		cpus func(t testing.TB) []cpuidCPU
		want []string
	}{
		{"Intel Sandy Bridge-EP, two sockets, leaf 4", func(t testing.TB) []cpuidCPU {
			return machine(readDump(t, "xeon-e5-2600-sandybridge.txt"), snbEPAPICs...)
		}, []string{
			"L1d 32K 64B: " + snbEPCores,
			"L1i 32K 64B: " + snbEPCores,
			"L2 256K 64B: " + snbEPCores,
			"L3 20M 64B: 0-7,16-23 8-15,24-31",
		}},
		{"AMD Piledriver, leaf 0x8000001D: modules share L1i and L2", func(t testing.TB) []cpuidCPU {
			return machine(readDump(t, "fx-8300-piledriver.txt"), 0, 1, 2, 3, 4, 5, 6, 7)
		}, []string{
			"L1d 16K 64B: 0 1 2 3 4 5 6 7",
			"L1i 64K 64B: 0-1 2-3 4-5 6-7",
			"L2 2M 64B: 0-1 2-3 4-5 6-7",
			"L3 8M 64B: 0-7",
		}},
		{"AMD Milan in a VM, leaf 0x8000001D", func(t testing.TB) []cpuidCPU {
			return machine(milan(t), 0, 1)
		}, []string{
			"L1d 32K 64B: 0 1",
			"L1i 32K 64B: 0 1",
			"L2 512K 64B: 0 1",
			"L3 32M 64B: 0-1",
		}},
		{"AMD Milan without topology extensions: legacy L3 is the processor's total", func(t testing.TB) []cpuidCPU {
			l := milan(t)
			r := l[leafKey{leafExtFeat, 0}]
			r.ecx &^= 1 << 22
			l[leafKey{leafExtFeat, 0}] = r
			return machine(l, 0, 1)
		}, []string{
			"L2 512K 64B: 0 1", // 0x80000005 is all zeros in this guest: no L1
			"L3 192M 64B total: 0-1",
		}},
		{"AMD Zen 5 in Firecracker, legacy leaves (this machine)", func(t testing.TB) []cpuidCPU {
			return machine(readDump(t, "epyc-zen5-firecracker.txt"), 0, 1)
		}, []string{
			"L1d 48K 64B: 0 1",
			"L1i 32K 64B: 0 1",
			"L2 1M 64B: 0 1",
			"L3 508M 64B total: 0 1", // 0x80000008 ECX: one core per package
		}},
		{"APIC ids unknown to the kernel: CPUID's", func(t testing.TB) []cpuidCPU {
			l := readDump(t, "fx-8300-piledriver.txt")
			cpus := machine(l, -1, -1)
			second := leaves{}
			for k, r := range l {
				second[k] = r
			}
			// APIC id 1 in leaf 1 and in the extended APIC id, which wins.
			second[leafKey{leafFeatures, 0}] = regs{0x00600f20, 0x01080800, 0x3e98320b, 0x178bfbff}
			second[leafKey{leafAMDTopo, 0}] = regs{1, 0x100, 0, 0}
			cpus[1].leaves = second
			return cpus
		}, []string{
			"L1d 16K 64B: 0 1",
			"L1i 64K 64B: 0-1",
			"L2 2M 64B: 0-1",
			"L3 8M 64B: 0-1",
		}},
		{"a CPU that could not be queried answers as the others", func(t testing.TB) []cpuidCPU {
			cpus := machine(readDump(t, "fx-8300-piledriver.txt"), 0, 1, 2, 3)
			cpus[3].leaves = nil
			return cpus
		}, []string{
			"L1d 16K 64B: 0 1 2 3",
			"L1i 64K 64B: 0-1 2-3",
			"L2 2M 64B: 0-1 2-3",
			"L3 8M 64B: 0-3",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			caches, err := decodeCPUID(tc.cpus(t))
			if err != nil {
				t.Fatal(err)
			}
			if got := kinds(caches); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("decoded\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// TestDecodeCPUIDMalformed feeds answers no processor gives: each is an
// error naming the CPU and the leaf, never a panic or a made-up cache.
func TestDecodeCPUIDMalformed(t *testing.T) {
	intel := func(sub0 regs) leaves {
		return leaves{
			{leafVendor, 0}:   {0xd, 0x756e6547, 0x6c65746e, 0x49656e69},
			{leafFeatures, 0}: {0x206d7, 0, 0, 0},
			{leafCaches, 0}:   sub0,
		}
	}
	tests := []struct {
		name string
		cpus []cpuidCPU
		want string
	}{
		{"reserved cache type", machine(intel(regs{0x25, 0x3f, 0x3f, 0}), 0), "CPU 0: leaf 0x4 subleaf 0: cache type 5"},
		{"level 0", machine(intel(regs{0x01, 0x3f, 0x3f, 0}), 0), "CPU 0: leaf 0x4 subleaf 0: cache level 0"},
		{"size beyond a petabyte", machine(intel(regs{0x21, 0xffffffff, 0xffffffff, 0}), 0), "a cache of more than"},
		{"nothing queried", []cpuidCPU{{cpu: 0, apic: 0}}, "no CPU could be queried"},
		{"one instance, two sizes", func() []cpuidCPU {
			cpus := machine(intel(regs{0x4121, 0x01c0003f, 0x3f, 0}), 0, 1)
			cpus[1].leaves = intel(regs{0x4121, 0x01c0003f, 0x7f, 0})
			return cpus
		}(), "CPU 1 describes the L1 Data cache it shares with CPU 0 as 65536 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			caches, err := decodeCPUID(tc.cpus)
			if err == nil || !errors.Is(err, ErrCPUID) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("decodeCPUID = %v, %v; want an ErrCPUID containing %q", kinds(caches), err, tc.want)
			}
		})
	}
}

// TestCollectLeaves replays a recording through collectLeaves: it asks for
// every leaf the decoder reads and nothing past the maxima or the first
// null cache subleaf.
func TestCollectLeaves(t *testing.T) {
	rec := readDump(t, "fx-8300-piledriver.txt")
	var asked []leafKey
	got := collectLeaves(func(leaf, sub uint32) (a, b, c, d uint32) {
		asked = append(asked, leafKey{leaf, sub})
		r := rec[leafKey{leaf, sub}]
		return r.eax, r.ebx, r.ecx, r.edx
	})
	for _, k := range asked {
		if k.leaf > 0xd && k.leaf < leafExtMax || k.leaf > 0x8000001e {
			t.Errorf("asked leaf %#x beyond the maxima", k.leaf)
		}
	}
	if _, ok := got[leafKey{leafAMDCaches, 4}]; !ok {
		t.Error("the null subleaf 4 of 0x8000001D, which ends the list, was not read")
	}
	if _, ok := got[leafKey{leafAMDCaches, 5}]; ok {
		t.Error("read past the null subleaf")
	}
	want, err := decodeCPUID(machine(rec, 0))
	if err != nil {
		t.Fatal(err)
	}
	have, err := decodeCPUID(machine(got, 0))
	if err != nil || !reflect.DeepEqual(have, want) {
		t.Fatalf("collected leaves decode to %v (%v), the recording to %v", kinds(have), err, kinds(want))
	}
}

// TestReadWithCPUID reads a sysfs tree without cache directories (this
// machine's case) with recorded CPUID answers: the caches come from CPUID
// and say so; a CPUID failure leaves none, with the reason.
func TestReadWithCPUID(t *testing.T) {
	tree := topotest.WithoutCaches(t, filepath.Join("testdata", "epyc2"))
	zen5 := readDump(t, "epyc-zen5-firecracker.txt")
	tests := []struct {
		name       string
		query      func([]int) ([]cpuidCPU, error)
		wantSource string
		want       []string
		wantNote   string
	}{
		{"recorded", func(cpus []int) ([]cpuidCPU, error) {
			if !reflect.DeepEqual(cpus, []int{0, 1}) {
				t.Errorf("CPUID asked for CPUs %v, want the online 0-1", cpus)
			}
			return machine(zen5, 0, 1), nil
		}, CachesFromCPUID, []string{"L1d 48K 64B: 0 1", "L1i 32K 64B: 0 1", "L2 1M 64B: 0 1", "L3 508M 64B total: 0 1"}, ""},
		{"no CPUID", func([]int) ([]cpuidCPU, error) {
			return nil, errors.New("CPUID is read on x86-64 Linux only")
		}, CachesFromNone, nil, "sysfs lists no cache; CPUID: CPUID is read on x86-64 Linux only"},
		{"CPUID lists none", func([]int) ([]cpuidCPU, error) {
			return machine(leaves{{leafVendor, 0}: {1, 0x756e6547, 0x6c65746e, 0x49656e69}}, 0, 1), nil
		}, CachesFromNone, nil, "sysfs lists no cache; neither does CPUID"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readWithCPUID(tree, tc.query)
			if err != nil {
				t.Fatal(err)
			}
			if got.CacheSource != tc.wantSource || got.CacheNote != tc.wantNote || !reflect.DeepEqual(kinds(got.Caches), tc.want) {
				t.Fatalf("caches %v from %q (%q); want %v from %q (%q)", kinds(got.Caches), got.CacheSource, got.CacheNote, tc.want, tc.wantSource, tc.wantNote)
			}
			if len(got.Cores) != 2 || len(got.NUMA) != 1 {
				t.Errorf("the rest of the tree was lost: %+v", got)
			}
			if tc.wantSource == CachesFromCPUID && !reflect.DeepEqual(got, zen5VM) {
				t.Errorf("readWithCPUID = %+v, want %+v", got, zen5VM)
			}
		})
	}
	// Caches in sysfs come first: CPUID is not asked.
	got, err := readWithCPUID(filepath.Join("testdata", "epyc2"), func([]int) ([]cpuidCPU, error) {
		t.Error("CPUID asked although sysfs lists caches")
		return nil, nil
	})
	if err != nil || got.CacheSource != CachesFromSysfs || !reflect.DeepEqual(got, epyc2) {
		t.Fatalf("readWithCPUID(epyc2) = %+v, %v; want the sysfs tree", got, err)
	}
}

func TestParseAPICIDs(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[int]int
		err      string
	}{
		{"two CPUs", "processor\t: 0\nvendor_id\t: AuthenticAMD\napicid\t\t: 0\ninitial apicid\t: 0\n\nprocessor\t: 1\napicid\t\t: 1\n", map[int]int{0: 0, 1: 1}, ""},
		{"sparse ids", "processor : 0\napicid : 16\nprocessor : 1\napicid : 18\n", map[int]int{0: 16, 1: 18}, ""},
		{"no apicid (not x86)", "processor : 0\nBogoMIPS : 50.00\n", map[int]int{}, ""},
		{"empty", "", map[int]int{}, ""},
		{"apicid first", "apicid : 3\nprocessor : 0\n", nil, "outside a processor's block"},
		{"bad number", "processor : 0\napicid : x\n", nil, `apicid "x"`},
		{"negative", "processor : 0\napicid : -1\n", nil, `apicid "-1"`},
		{"processor twice", "processor : 0\napicid : 0\nprocessor : 0\n", nil, "listed twice"},
		{"processor out of range", "processor : 99999999\n", nil, "processor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAPICIDs(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parseAPICIDs = %v, %v; want an ErrMalformed with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parseAPICIDs = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
