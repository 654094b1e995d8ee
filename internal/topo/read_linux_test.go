package topo

import (
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/topo/topotest"
)

func TestRead(t *testing.T) {
	topo, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.CPUs) == 0 {
		t.Fatal("Read found no online CPU")
	}
	for _, c := range topo.Caches {
		if c.Level < 1 || len(c.CPUs) == 0 || !containsAll(topo.CPUs, c.CPUs[:1]) {
			t.Errorf("cache %+v: no level or not shared by an online CPU", c)
		}
	}
	t.Logf("this machine:\n%s", topo)
}

func TestAllowed(t *testing.T) {
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	topo, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) == 0 || !containsAll(topo.CPUs, allowed) {
		t.Fatalf("Allowed() = %v; want a non-empty subset of the online CPUs %v", allowed, topo.CPUs)
	}
}

// TestReadAgreesWithLstopo compares Read with hwloc's view of this machine
// (Debian's hwloc-nox package): the numbers of CPUs and cores, and for each
// kind of cache (L1d, L1i, L2, L3 …) the size and CPUs of each instance —
// read from sysfs, or decoded from CPUID where sysfs lists none, as hwloc
// does too.
func TestReadAgreesWithLstopo(t *testing.T) {
	lstopo, err := exec.LookPath("lstopo-no-graphics")
	if err != nil {
		t.Skip("lstopo-no-graphics not found: install hwloc (apt-get install hwloc-nox) to compare topo.Read with hwloc; TestAgreesWithRecordedLstopo compares recorded machines")
	}
	if root := os.Getenv(EnvSysfs); root != "" {
		t.Skipf("%s=%s: Read describes that tree, lstopo this machine's /sys; TestAgreesWithRecordedLstopo compares recorded machines", EnvSysfs, root)
	}
	// --whole-system: hwloc otherwise hides CPUs this process may not use;
	// Read describes the machine, Allowed the process.
	out, err := exec.Command(lstopo, "--whole-system", "--no-io", "--of", "xml").Output()
	if err != nil {
		t.Fatalf("%s: %v", lstopo, err)
	}
	hw, err := parseLstopoXML(out)
	if err != nil {
		t.Fatalf("parsing lstopo's XML: %v", err)
	}
	topo, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summarize(topo).String(), hw.String(); got != want {
		t.Fatalf("topo.Read (caches from %s) and lstopo disagree:\ntopo:   %s\nlstopo: %s", topo.CacheSource, got, want)
	}
	t.Logf("topo.Read (caches from %s) and lstopo agree: %s", topo.CacheSource, hw)
}

// TestAgreesWithRecordedLstopo makes the same comparison with recorded
// machines, wherever the tests run: each tree (and CPUID recording, for a
// machine whose sysfs lists no cache) against lstopo's XML export made on
// that machine.
func TestAgreesWithRecordedLstopo(t *testing.T) {
	noCaches := topotest.WithoutCaches(t, filepath.Join("testdata", "epyc2"))
	zen5 := readDump(t, "epyc-zen5-firecracker.txt")
	tests := []struct {
		name, tree, xml string
		cpuid           leaves
	}{
		{"KVM guest, caches in sysfs", filepath.Join("testdata", "epyc2"), "lstopo-epyc2.xml", nil},
		{"Firecracker guest, caches from CPUID", noCaches, "lstopo-zen5-firecracker.xml", zen5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.xml))
			if err != nil {
				t.Fatal(err)
			}
			hw, err := parseLstopoXML(data)
			if err != nil {
				t.Fatal(err)
			}
			topo, err := readWithCPUID(tc.tree, func([]int) ([]cpuidCPU, error) { return machine(tc.cpuid, 0, 1), nil })
			if err != nil {
				t.Fatal(err)
			}
			if got, want := summarize(topo).String(), hw.String(); got != want {
				t.Fatalf("topo and lstopo disagree:\ntopo:   %s\nlstopo: %s", got, want)
			}
		})
	}
}

// summary is what the lstopo comparisons compare.
type summary struct {
	cpus, cores int
	caches      map[string][]string // cache name → "size@CPUs" per instance, sorted
}

func summarize(t *Topology) summary {
	s := summary{cpus: len(t.CPUs), cores: len(t.Cores), caches: map[string][]string{}}
	for _, c := range t.Caches {
		s.caches[c.Name()] = append(s.caches[c.Name()], fmt.Sprintf("%d@%s", c.Size, FormatCPUList(c.CPUs)))
	}
	for _, inst := range s.caches {
		slices.Sort(inst)
	}
	return s
}

func (s summary) String() string {
	names := make([]string, 0, len(s.caches))
	for n := range s.caches {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%d CPUs, %d cores", s.cpus, s.cores)
	for _, n := range names {
		fmt.Fprintf(&b, "; %s %v", n, s.caches[n])
	}
	return b.String()
}

// hwlocObject is an <object> of hwloc's XML export (hwloc2.dtd).
type hwlocObject struct {
	Type      string        `xml:"type,attr"`
	CPUSet    string        `xml:"cpuset,attr"`
	CacheSize int64         `xml:"cache_size,attr"`
	CacheType int           `xml:"cache_type,attr"` // 0 unified, 1 data, 2 instruction
	Depth     int           `xml:"depth,attr"`      // a cache's level
	Children  []hwlocObject `xml:"object"`
}

// parseLstopoXML counts hwloc's PUs and Cores and collects its caches'
// sizes and CPUs under the names Cache.Name uses. hwloc 2 names cache
// objects L1Cache … L5Cache and L1iCache … L3iCache; hwloc 1 named them
// all Cache.
func parseLstopoXML(data []byte) (summary, error) {
	var doc struct {
		Objects []hwlocObject `xml:"object"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		return summary{}, err
	}
	s := summary{caches: map[string][]string{}}
	var walk func(o hwlocObject) error
	walk = func(o hwlocObject) error {
		switch {
		case o.Type == "PU":
			s.cpus++
		case o.Type == "Core":
			s.cores++
		case o.Type == "Cache" || strings.HasSuffix(o.Type, "Cache"):
			level := o.Depth
			if l, ok := strings.CutPrefix(o.Type, "L"); ok {
				n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSuffix(l, "Cache"), "i"))
				if err != nil {
					return fmt.Errorf("object type %q", o.Type)
				}
				level = n
			}
			c := Cache{Level: level, Type: Unified}
			switch o.CacheType {
			case 1:
				c.Type = Data
			case 2:
				c.Type = Instruction
			}
			cpus, err := parseHwlocCPUSet(o.CPUSet)
			if err != nil {
				return fmt.Errorf("%s cpuset: %w", o.Type, err)
			}
			s.caches[c.Name()] = append(s.caches[c.Name()], fmt.Sprintf("%d@%s", o.CacheSize, FormatCPUList(cpus)))
		}
		for _, child := range o.Children {
			if err := walk(child); err != nil {
				return err
			}
		}
		return nil
	}
	for _, o := range doc.Objects {
		if err := walk(o); err != nil {
			return summary{}, err
		}
	}
	for _, inst := range s.caches {
		slices.Sort(inst)
	}
	return s, nil
}

// parseHwlocCPUSet parses hwloc's bitmap format: 32-bit hex words, most
// significant first, separated by commas ("0x00000003",
// "0x00000001,0xffffffff").
func parseHwlocCPUSet(s string) ([]int, error) {
	words := strings.Split(s, ",")
	var cpus []int
	for i, w := range words {
		v, err := strconv.ParseUint(strings.TrimPrefix(w, "0x"), 16, 32)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		base := 32 * (len(words) - 1 - i)
		for bit := range 32 {
			if v&(1<<bit) != 0 {
				cpus = append(cpus, base+bit)
			}
		}
	}
	slices.Sort(cpus)
	return cpus, nil
}

// TestParseLstopoXML checks the XML reader above on recorded exports, so
// the comparison is tested even where lstopo is absent.
func TestParseLstopoXML(t *testing.T) {
	tests := []struct{ file, want string }{
		{"lstopo-epyc2.xml", "2 CPUs, 2 cores; L1d [32768@0 32768@1]; L1i [32768@0 32768@1]; L2 [1048576@0 1048576@1]; L3 [33554432@0-1]"},
		{"lstopo-zen5-firecracker.xml", "2 CPUs, 2 cores; L1d [49152@0 49152@1]; L1i [32768@0 32768@1]; L2 [1048576@0 1048576@1]; L3 [532676608@0 532676608@1]"},
	}
	for _, tc := range tests {
		data, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseLstopoXML(data)
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != tc.want {
			t.Errorf("parseLstopoXML(%s) = %s, want %s", tc.file, got, tc.want)
		}
	}
	if _, err := parseLstopoXML([]byte("<topology><object")); err == nil {
		t.Error("parseLstopoXML accepted truncated XML")
	}
	for in, want := range map[string]string{"0x00000003": "0-1", "0x00000001,0x80000000": "31-32", "0x0": ""} {
		cpus, err := parseHwlocCPUSet(in)
		if err != nil || FormatCPUList(cpus) != want {
			t.Errorf("parseHwlocCPUSet(%q) = %v, %v; want %s", in, cpus, err, want)
		}
	}
}
