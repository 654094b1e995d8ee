package topo

import (
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
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
// kind of cache (L1d, L1i, L2, L3 …) the sizes of its instances.
func TestReadAgreesWithLstopo(t *testing.T) {
	lstopo, err := exec.LookPath("lstopo-no-graphics")
	if err != nil {
		t.Skip("lstopo-no-graphics not found: install hwloc (apt-get install hwloc-nox) to compare topo.Read with hwloc")
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
	ours := summary{cpus: len(topo.CPUs), cores: len(topo.Cores), caches: map[string][]int64{}}
	for _, c := range topo.Caches {
		ours.caches[c.Name()] = append(ours.caches[c.Name()], c.Size)
	}
	for _, sizes := range ours.caches {
		slices.Sort(sizes)
	}
	if got, want := ours.String(), hw.String(); got != want {
		t.Fatalf("topo.Read and lstopo disagree:\ntopo:   %s\nlstopo: %s", got, want)
	}
	t.Logf("topo.Read and lstopo agree: %s", ours.String())
}

// summary is what TestReadAgreesWithLstopo compares.
type summary struct {
	cpus, cores int
	caches      map[string][]int64 // cache name → instance sizes, sorted
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
	CacheSize int64         `xml:"cache_size,attr"`
	CacheType int           `xml:"cache_type,attr"` // 0 unified, 1 data, 2 instruction
	Depth     int           `xml:"depth,attr"`      // a cache's level
	Children  []hwlocObject `xml:"object"`
}

// parseLstopoXML counts hwloc's PUs and Cores and collects its caches'
// sizes under the names Cache.Name uses. hwloc 2 names cache objects
// L1Cache … L5Cache and L1iCache … L3iCache; hwloc 1 named them all Cache.
func parseLstopoXML(data []byte) (summary, error) {
	var doc struct {
		Objects []hwlocObject `xml:"object"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		return summary{}, err
	}
	s := summary{caches: map[string][]int64{}}
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
			s.caches[c.Name()] = append(s.caches[c.Name()], o.CacheSize)
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
	for _, sizes := range s.caches {
		slices.Sort(sizes)
	}
	return s, nil
}

// TestParseLstopoXML checks the XML reader above on this machine's export
// (testdata/lstopo-epyc2.xml, hwloc 2.9), so the comparison is tested even
// where lstopo is absent.
func TestParseLstopoXML(t *testing.T) {
	data, err := os.ReadFile("testdata/lstopo-epyc2.xml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseLstopoXML(data)
	if err != nil {
		t.Fatal(err)
	}
	const want = "2 CPUs, 2 cores; L1d [32768 32768]; L1i [32768 32768]; L2 [1048576 1048576]; L3 [33554432]"
	if got.String() != want {
		t.Fatalf("parseLstopoXML = %s, want %s", got, want)
	}
	if _, err := parseLstopoXML([]byte("<topology><object")); err == nil {
		t.Fatal("parseLstopoXML accepted truncated XML")
	}
}
