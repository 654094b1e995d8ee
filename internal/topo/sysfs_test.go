package topo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// epyc2 is testdata/epyc2: this development machine.
var epyc2 = &Topology{
	CPUs: []int{0, 1},
	Caches: []Cache{
		{Level: 1, Type: Data, Size: 32 << 10, LineSize: 64, CPUs: []int{0}},
		{Level: 1, Type: Data, Size: 32 << 10, LineSize: 64, CPUs: []int{1}},
		{Level: 1, Type: Instruction, Size: 32 << 10, LineSize: 64, CPUs: []int{0}},
		{Level: 1, Type: Instruction, Size: 32 << 10, LineSize: 64, CPUs: []int{1}},
		{Level: 2, Type: Unified, Size: 1 << 20, LineSize: 64, CPUs: []int{0}},
		{Level: 2, Type: Unified, Size: 1 << 20, LineSize: 64, CPUs: []int{1}},
		{Level: 3, Type: Unified, Size: 32 << 20, LineSize: 64, CPUs: []int{0, 1}},
	},
	CacheSource: CachesFromSysfs,
	Cores:       []Core{{Package: 0, ID: 0, CPUs: []int{0}}, {Package: 0, ID: 1, CPUs: []int{1}}},
	Packages:    []Package{{ID: 0, CPUs: []int{0, 1}}},
	NUMA:        []Node{{ID: 0, CPUs: []int{0, 1}}},
}

// zen5VM is this development machine as Read sees it: epyc2's tree
// without cache directories (a Firecracker guest), the caches from CPUID's
// legacy leaves (testdata/cpuid/epyc-zen5-firecracker.txt) with the
// processor's whole L3 reported per core.
var zen5VM = &Topology{
	CPUs: []int{0, 1},
	Caches: []Cache{
		{Level: 1, Type: Data, Size: 48 << 10, LineSize: 64, CPUs: []int{0}},
		{Level: 1, Type: Data, Size: 48 << 10, LineSize: 64, CPUs: []int{1}},
		{Level: 1, Type: Instruction, Size: 32 << 10, LineSize: 64, CPUs: []int{0}},
		{Level: 1, Type: Instruction, Size: 32 << 10, LineSize: 64, CPUs: []int{1}},
		{Level: 2, Type: Unified, Size: 1 << 20, LineSize: 64, CPUs: []int{0}},
		{Level: 2, Type: Unified, Size: 1 << 20, LineSize: 64, CPUs: []int{1}},
		{Level: 3, Type: Unified, Size: 508 << 20, LineSize: 64, CPUs: []int{0}, Total: true},
		{Level: 3, Type: Unified, Size: 508 << 20, LineSize: 64, CPUs: []int{1}, Total: true},
	},
	CacheSource: CachesFromCPUID,
	Cores:       []Core{{Package: 0, ID: 0, CPUs: []int{0}}, {Package: 0, ID: 1, CPUs: []int{1}}},
	Packages:    []Package{{ID: 0, CPUs: []int{0, 1}}},
	NUMA:        []Node{{ID: 0, CPUs: []int{0, 1}}},
}

// e5345 is testdata/e5345: seed 004's two quad-core Xeon E5345 with L2s
// shared by pairs of cores, CPUs numbered across the packages.
var e5345 = func() *Topology {
	t := &Topology{CPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, CacheSource: CachesFromSysfs}
	for _, typ := range []string{Data, Instruction} {
		for cpu := range 8 {
			t.Caches = append(t.Caches, Cache{Level: 1, Type: typ, Size: 32 << 10, LineSize: 64, CPUs: []int{cpu}})
		}
	}
	for _, pair := range [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}} {
		t.Caches = append(t.Caches, Cache{Level: 2, Type: Unified, Size: 4 << 20, LineSize: 64, CPUs: pair})
	}
	t.Cores = []Core{
		{0, 0, []int{0}}, {0, 1, []int{4}}, {0, 2, []int{2}}, {0, 3, []int{6}},
		{1, 0, []int{1}}, {1, 1, []int{5}}, {1, 2, []int{3}}, {1, 3, []int{7}},
	}
	t.Packages = []Package{{0, []int{0, 2, 4, 6}}, {1, []int{1, 3, 5, 7}}}
	return t
}()

// minimal is testdata/minimal: no ids, no NUMA, a cache of unknown size.
var minimal = &Topology{
	CPUs:        []int{0, 1},
	Caches:      []Cache{{Level: 2, Type: Unified, CPUs: []int{0}}},
	CacheSource: CachesFromSysfs,
}

func TestReadFrom(t *testing.T) {
	tests := []struct {
		tree string
		want *Topology
	}{
		{"epyc2", epyc2},
		{"e5345", e5345},
		{"minimal", minimal},
	}
	for _, tc := range tests {
		t.Run(tc.tree, func(t *testing.T) {
			got, err := ReadFrom(filepath.Join("testdata", tc.tree))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ReadFrom(testdata/%s) =\n%#v\nwant\n%#v", tc.tree, got, tc.want)
			}
		})
	}
}

// TestReadFromMalformed copies testdata/epyc2 and breaks one file per
// case: ReadFrom must return an error that names the file (and wraps
// ErrMalformed when the contents are at fault), never panic.
func TestReadFromMalformed(t *testing.T) {
	const (
		cpu0  = "devices/system/cpu/cpu0"
		l1d   = cpu0 + "/cache/index0"
		l2    = cpu0 + "/cache/index2"
		node0 = "devices/system/node/node0/cpulist"
	)
	remove := "\x00remove" // content that stands for "delete the file"
	tests := []struct {
		name      string
		file      string
		content   string
		wantFile  string // the file the error must name; file when ""
		wantText  string
		malformed bool // the error wraps ErrMalformed
	}{
		{"online missing", "devices/system/cpu/online", remove, "", "missing", true},
		{"online empty", "devices/system/cpu/online", "\n", "", "no online CPU", true},
		{"online garbage", "devices/system/cpu/online", "0-x\n", "", `"x" is not a CPU number`, true},
		{"online descending", "devices/system/cpu/online", "1-0\n", "", "descends", true},
		{"online too large", "devices/system/cpu/online", strings.Repeat("0,", maxFileSize), "", "longer than", true},
		{"level missing", l1d + "/level", remove, "", "missing", true},
		{"level not a number", l1d + "/level", "one\n", "", `"one" is not an integer`, true},
		{"level zero", l1d + "/level", "0\n", "", `"0" is not an integer from 1 to 16`, true},
		{"type missing", l1d + "/type", remove, "", "missing", true},
		{"type unknown", l1d + "/type", "Trace\n", "", `"Trace" is not Data, Instruction or Unified`, true},
		{"size unit", l2 + "/size", "4096Q\n", "", `"4096Q" is not a cache size`, true},
		{"size negative", l2 + "/size", "-1K\n", "", "not a cache size", true},
		{"size overflow", l2 + "/size", "9223372036854775807K\n", "", "not a cache size", true},
		{"size empty", l2 + "/size", "\n", "", "not a cache size", true},
		{"line size", l2 + "/coherency_line_size", "64B\n", "", `"64B" is not an integer`, true},
		{"shared list missing", l2 + "/shared_cpu_list", remove, "", "missing", true},
		{"shared list garbage", l2 + "/shared_cpu_list", "0-\n", "", "empty CPU number", true},
		{"shared list without its CPU", l2 + "/shared_cpu_list", "1\n", "", "do not include CPU 0", true},
		{"two CPUs disagree", "devices/system/cpu/cpu1/cache/index3/size", "16384K\n",
			"devices/system/cpu/cpu1/cache/index3", "L3 shared by CPUs 0-1 as 16777216 bytes", true},
		{"core id", cpu0 + "/topology/core_id", "zero\n", "", `"zero" is not an integer`, true},
		{"package id below -1", cpu0 + "/topology/physical_package_id", "-2\n", "", `"-2" is not an integer from -1`, true},
		{"node cpulist missing", node0, remove, "", "missing", true},
		{"node cpulist garbage", node0, "0-3;4\n", "", "not a CPU number", true},
		{"cache dir is a file", cpu0 + "/cache", "index0\n", cpu0 + "/cache", "not a directory", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case copies the tree
			root := t.TempDir()
			if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", "epyc2"))); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(root, tc.file)
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
			if tc.content != remove {
				mustWrite(t, path, tc.content)
			}
			topo, err := ReadFrom(root)
			if err == nil {
				t.Fatalf("ReadFrom succeeded: %v", topo)
			}
			wantFile := filepath.Join(root, tc.file)
			if tc.wantFile != "" {
				wantFile = filepath.Join(root, tc.wantFile)
			}
			if msg := err.Error(); !strings.Contains(msg, wantFile) || !strings.Contains(msg, tc.wantText) {
				t.Fatalf("error %q; want one naming %s and saying %q", msg, wantFile, tc.wantText)
			}
			if errors.Is(err, ErrMalformed) != tc.malformed {
				t.Fatalf("error %q: errors.Is(err, ErrMalformed) = %v, want %v", err, !tc.malformed, tc.malformed)
			}
		})
	}
}

func TestReadFromNoTree(t *testing.T) {
	absent := filepath.Join(t.TempDir(), "absent")
	if _, err := ReadFrom(absent); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), absent) {
		t.Fatalf("ReadFrom(absent dir) error = %v; want one naming %s as not existing", err, absent)
	}
	// A directory that is not a sysfs tree lacks the one required file.
	if _, err := ReadFrom(t.TempDir()); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "devices/system/cpu/online: malformed: missing") {
		t.Fatalf("ReadFrom(empty dir) error = %v; want a malformed error naming online", err)
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImplausibleSize: a cache listed larger than MaxCacheInstance (a
// hypervisor's sum, say) is marked Total whatever its source, and the rules
// that need one instance leave it out.
func TestImplausibleSize(t *testing.T) {
	tree := t.TempDir()
	if err := os.CopyFS(tree, os.DirFS(filepath.Join("testdata", "epyc2"))); err != nil {
		t.Fatal(err)
	}
	for _, cpu := range []string{"cpu0", "cpu1"} {
		if err := os.WriteFile(filepath.Join(tree, "devices", "system", "cpu", cpu, "cache", "index3", "size"), []byte("2097152K\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadFrom(tree)
	if err != nil {
		t.Fatal(err)
	}
	l3 := got.Caches[len(got.Caches)-1]
	if l3.Level != 3 || l3.Size != 2<<30 || !l3.Total {
		t.Fatalf("L3 read as %+v, want 2 GiB and Total", l3)
	}
	if s := got.Sharing([]int{0}, []int{1}); s != SharingUnknown {
		t.Errorf("Sharing = %v, want unknown", s)
	}
	if b := got.ExplainDMAMin([]int{0}, []int{1}); b.Bytes != 512<<10 || b.LeftOut == nil || b.LeftOut.Level != 3 {
		t.Errorf("DMA_min %d bytes, left out %v; want 512 KiB from the L2s, the L3 left out", b.Bytes, b.LeftOut)
	}
}
