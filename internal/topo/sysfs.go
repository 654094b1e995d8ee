package topo

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The sysfs files read, relative to the root (Documentation/ABI/testing/
// sysfs-devices-system-cpu and sysfs-devices-system-node):
//
//	devices/system/cpu/online                                   required
//	devices/system/cpu/cpuN/cache/indexK/{level,type,shared_cpu_list}
//	                                                            required in each indexK
//	devices/system/cpu/cpuN/cache/indexK/{size,coherency_line_size}
//	devices/system/cpu/cpuN/topology/{core_id,physical_package_id}
//	devices/system/node/nodeN/cpulist                           required in each nodeN
//
// A missing cache/, topology/ or node/ directory is not an error: virtual
// machines and containers often lack them, and the topology is then just
// less detailed.
const (
	cpuDir  = "devices/system/cpu"
	nodeDir = "devices/system/node"
)

// maxFileSize bounds what is read from one file. The longest real file is a
// cpulist of a few thousand CPUs; a tree built by hand must not make ReadFrom
// read a disk image.
const maxFileSize = 1 << 20

// maxCacheSize bounds a cache size (1 PiB) so that "…K" cannot overflow.
const maxCacheSize = 1 << 50

// ReadFrom reads the topology from the sysfs tree rooted at root: the
// directory that stands for /sys, such as a copy of this machine's tree in
// a test's testdata/. Malformed contents are errors that wrap ErrMalformed
// and name the file; missing optional files are not errors (see above).
func ReadFrom(root string) (*Topology, error) {
	r := reader{root: root}
	if _, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("topo: %w", err) // not a tree at all: say so plainly
	}
	online, err := r.cpuList(filepath.Join(cpuDir, "online"))
	if err != nil {
		return nil, err
	}
	if len(online) == 0 {
		return nil, r.malformed(filepath.Join(cpuDir, "online"), "no online CPU")
	}
	t := &Topology{CPUs: online}
	caches := map[string]seenCache{}
	cores := map[[2]int][]int{} // (package, core id) → CPUs
	packages := map[int][]int{} // package id → CPUs
	for _, cpu := range online {
		dir := filepath.Join(cpuDir, "cpu"+strconv.Itoa(cpu))
		if err := r.caches(dir, cpu, caches); err != nil {
			return nil, err
		}
		pkg, core, err := r.ids(dir)
		if err != nil {
			return nil, err
		}
		if core >= 0 {
			cores[[2]int{pkg, core}] = append(cores[[2]int{pkg, core}], cpu)
		}
		if pkg >= 0 {
			packages[pkg] = append(packages[pkg], cpu)
		}
	}
	for _, c := range caches {
		t.Caches = append(t.Caches, c.Cache)
	}
	slices.SortFunc(t.Caches, compareCaches)
	t.CacheSource = CachesFromSysfs
	if len(t.Caches) == 0 {
		t.CacheSource, t.CacheNote = CachesFromNone, "sysfs lists no cache"
	}
	markTotals(t.Caches)
	for k, cpus := range cores {
		t.Cores = append(t.Cores, Core{Package: k[0], ID: k[1], CPUs: cpus})
	}
	slices.SortFunc(t.Cores, func(a, b Core) int { return cmp.Or(cmp.Compare(a.Package, b.Package), cmp.Compare(a.ID, b.ID)) })
	for id, cpus := range packages {
		t.Packages = append(t.Packages, Package{ID: id, CPUs: cpus})
	}
	slices.SortFunc(t.Packages, func(a, b Package) int { return cmp.Compare(a.ID, b.ID) })
	if t.NUMA, err = r.nodes(); err != nil {
		return nil, err
	}
	return t, nil
}

// compareCaches orders cache instances by level, type (Data, Instruction,
// Unified) and CPU set.
func compareCaches(a, b Cache) int {
	return cmp.Or(cmp.Compare(a.Level, b.Level), cmp.Compare(typeOrder(a.Type), typeOrder(b.Type)), slices.Compare(a.CPUs, b.CPUs))
}

func typeOrder(typ string) int {
	switch typ {
	case Data:
		return 0
	case Instruction:
		return 1
	}
	return 2
}

// seenCache is a cache instance and the file that first described it, to
// name both files when another CPU describes the same instance differently.
type seenCache struct {
	Cache
	dir string
}

// reader reads files under root, naming them by their full path in errors.
type reader struct{ root string }

func (r reader) path(rel string) string { return filepath.Join(r.root, rel) }

func (r reader) malformed(rel, format string, args ...any) error {
	return fmt.Errorf("topo: %s: %w: %s", r.path(rel), ErrMalformed, fmt.Sprintf(format, args...))
}

// read returns the file's contents without surrounding white space;
// ok is false when the file does not exist.
func (r reader) read(rel string) (s string, ok bool, err error) {
	f, err := os.Open(r.path(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("topo: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return "", false, fmt.Errorf("topo: reading %s: %w", r.path(rel), err)
	}
	if len(b) > maxFileSize {
		return "", false, r.malformed(rel, "longer than %d bytes", maxFileSize)
	}
	return strings.TrimSpace(string(b)), true, nil
}

// required is read for a file that must exist.
func (r reader) required(rel string) (string, error) {
	s, ok, err := r.read(rel)
	if err == nil && !ok {
		err = r.malformed(rel, "missing")
	}
	return s, err
}

func (r reader) cpuList(rel string) ([]int, error) {
	s, err := r.required(rel)
	if err != nil {
		return nil, err
	}
	cpus, err := ParseCPUList(s)
	if err != nil {
		return nil, r.malformed(rel, "%v", err)
	}
	return cpus, nil
}

// number parses the optional integer file rel, which must lie in [lo, hi];
// ok is false when the file is missing.
func (r reader) number(rel string, lo, hi int) (n int, ok bool, err error) {
	s, ok, err := r.read(rel)
	if err != nil || !ok {
		return 0, false, err
	}
	n, err = strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, false, r.malformed(rel, "%q is not an integer from %d to %d", s, lo, hi)
	}
	return n, true, nil
}

// caches adds the cache instances CPU cpu's directory describes to seen.
func (r reader) caches(dir string, cpu int, seen map[string]seenCache) error {
	entries, err := os.ReadDir(r.path(filepath.Join(dir, "cache")))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("topo: %w", err)
	}
	for _, e := range entries {
		if !isNumbered(e.Name(), "index") {
			continue // uevent, power/ …
		}
		idx := filepath.Join(dir, "cache", e.Name())
		c, err := r.cache(idx, cpu)
		if err != nil {
			return err
		}
		key := fmt.Sprintf("%d/%s/%s", c.Level, c.Type, FormatCPUList(c.CPUs))
		prev, dup := seen[key]
		if !dup {
			seen[key] = seenCache{c, idx}
			continue
		}
		if prev.Size != c.Size || prev.LineSize != c.LineSize {
			return r.malformed(idx, "describes %s shared by CPUs %s as %d bytes with %d-byte lines; %s says %d bytes with %d-byte lines",
				c.Name(), FormatCPUList(c.CPUs), c.Size, c.LineSize, r.path(prev.dir), prev.Size, prev.LineSize)
		}
	}
	return nil
}

// cache reads one cache/indexK directory of CPU cpu.
func (r reader) cache(idx string, cpu int) (Cache, error) {
	var c Cache
	level, ok, err := r.number(filepath.Join(idx, "level"), 1, 16)
	if err != nil {
		return c, err
	}
	if !ok {
		return c, r.malformed(filepath.Join(idx, "level"), "missing")
	}
	c.Level = level
	typ, err := r.required(filepath.Join(idx, "type"))
	if err != nil {
		return c, err
	}
	switch typ {
	case Data, Instruction, Unified:
		c.Type = typ
	default:
		return c, r.malformed(filepath.Join(idx, "type"), "%q is not Data, Instruction or Unified", typ)
	}
	if s, ok, err := r.read(filepath.Join(idx, "size")); err != nil {
		return c, err
	} else if ok {
		if c.Size, err = parseCacheSize(s); err != nil {
			return c, r.malformed(filepath.Join(idx, "size"), "%v", err)
		}
	}
	if c.LineSize, _, err = r.number(filepath.Join(idx, "coherency_line_size"), 0, 1<<20); err != nil {
		return c, err
	}
	rel := filepath.Join(idx, "shared_cpu_list")
	if c.CPUs, err = r.cpuList(rel); err != nil {
		return c, err
	}
	if _, ok := slices.BinarySearch(c.CPUs, cpu); !ok {
		return c, r.malformed(rel, "CPU %d's cache is shared by CPUs %q, which do not include CPU %d", cpu, FormatCPUList(c.CPUs), cpu)
	}
	return c, nil
}

// parseCacheSize parses a cache size as the kernel prints it ("32K", in
// practice always K) or plain bytes; K, M and G are binary.
func parseCacheSize(s string) (int64, error) {
	digits, scale := s, int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K':
			digits, scale = s[:n-1], 1<<10
		case 'M':
			digits, scale = s[:n-1], 1<<20
		case 'G':
			digits, scale = s[:n-1], 1<<30
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 0 || strings.TrimLeft(digits, "0123456789") != "" || n > maxCacheSize/scale {
		return 0, fmt.Errorf("%q is not a cache size such as 32K", s)
	}
	return n * scale, nil
}

// ids reads a CPU's package and core ids; -1 stands for a missing file
// and for the -1 some platforms write when they do not know.
func (r reader) ids(dir string) (pkg, core int, err error) {
	pkg, ok, err := r.number(filepath.Join(dir, "topology", "physical_package_id"), -1, 1<<30)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		pkg = -1
	}
	core, ok, err = r.number(filepath.Join(dir, "topology", "core_id"), -1, 1<<30)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		core = -1
	}
	return pkg, core, nil
}

// nodes reads the NUMA nodes, if sysfs has them.
func (r reader) nodes() ([]Node, error) {
	entries, err := os.ReadDir(r.path(nodeDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("topo: %w", err)
	}
	var nodes []Node
	for _, e := range entries {
		if !isNumbered(e.Name(), "node") {
			continue // online, possible, has_memory …
		}
		id, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "node"))
		if err != nil || id > MaxCPU {
			return nil, r.malformed(filepath.Join(nodeDir, e.Name()), "node number out of range")
		}
		cpus, err := r.cpuList(filepath.Join(nodeDir, e.Name(), "cpulist"))
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, Node{ID: id, CPUs: cpus})
	}
	slices.SortFunc(nodes, func(a, b Node) int { return cmp.Compare(a.ID, b.ID) })
	return nodes, nil
}

// isNumbered reports whether name is prefix followed by decimal digits.
func isNumbered(name, prefix string) bool {
	digits, ok := strings.CutPrefix(name, prefix)
	return ok && digits != "" && len(digits) <= 10 && strings.TrimLeft(digits, "0123456789") == ""
}
