package topo

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// Where sysfs lists no cache (many virtual machines and containers), the
// cache hierarchy is decoded from the processor's CPUID leaves, as hwloc's
// x86 backend does (hwloc/topology-x86.c):
//
//   - Intel (and Zhaoxin, Centaur): leaf 4, one subleaf per cache (Intel
//     SDM vol. 2A, "CPUID—Deterministic Cache Parameters Leaf");
//   - AMD and Hygon with TopologyExtensions (leaf 0x80000001 ECX bit 22):
//     leaf 0x8000001D, the same layout (AMD APM vol. 3, appendix E.4.15);
//   - other AMD: the legacy leaves 0x80000005 (L1d, L1i) and 0x80000006
//     (L2, L3), which give no sharing: L1 and L2 are private, the L3 is
//     shared by the package that leaf 0x80000008 describes.
//
// Each descriptor says how many logical processors (APIC ids) share the
// cache; CPUs whose APIC ids agree above that many low bits share one
// instance (the rule Linux's cacheinfo uses to build shared_cpu_list).

// CPUID leaves read.
const (
	leafVendor    = 0x0
	leafFeatures  = 0x1
	leafCaches    = 0x4 // deterministic cache parameters (Intel)
	leafX2APIC    = 0xB // extended topology: EDX is the x2APIC id
	leafExtMax    = 0x80000000
	leafExtFeat   = 0x80000001 // ECX bit 22: TopologyExtensions (AMD)
	leafL1        = 0x80000005 // AMD legacy: L1d in ECX, L1i in EDX
	leafL2L3      = 0x80000006 // AMD legacy: L2 in ECX, L3 in EDX
	leafSizes     = 0x80000008 // AMD: ECX cores per package and APIC id bits
	leafAMDCaches = 0x8000001D // AMD cache topology, leaf 4's layout
	leafAMDTopo   = 0x8000001E // AMD: EAX is the extended APIC id
)

// maxSubleaves bounds the cache subleaves read (hwloc's guard): a real
// processor lists at most five caches.
const maxSubleaves = 16

// leafKey is one CPUID query: the EAX (leaf) and ECX (subleaf) inputs.
type leafKey struct{ leaf, sub uint32 }

// regs is one query's answer.
type regs struct{ eax, ebx, ecx, edx uint32 }

// leaves holds what one logical CPU answered; a leaf not in the map reads
// as zeros, as an unsupported leaf does on AMD processors.
type leaves map[leafKey]regs

func (l leaves) get(leaf, sub uint32) regs { return l[leafKey{leaf, sub}] }

// cpuidCPU is one logical CPU: its number, its APIC id as the kernel knows
// it (-1: unknown, then taken from CPUID) and its CPUID answers (nil when
// it could not be queried: the first queried CPU's stand in).
type cpuidCPU struct {
	cpu    int
	apic   int
	leaves leaves
}

// collectLeaves asks query for every leaf the decoder reads, within the
// maxima the processor reports, and the cache subleaves up to the first
// null one.
func collectLeaves(query func(leaf, sub uint32) (eax, ebx, ecx, edx uint32)) leaves {
	l := leaves{}
	ask := func(leaf, sub uint32) regs {
		a, b, c, d := query(leaf, sub)
		r := regs{a, b, c, d}
		l[leafKey{leaf, sub}] = r
		return r
	}
	maxBasic := ask(leafVendor, 0).eax
	maxExt := ask(leafExtMax, 0).eax
	if maxBasic >= leafFeatures {
		ask(leafFeatures, 0)
	}
	subleaves := func(leaf uint32) {
		for s := uint32(0); s < maxSubleaves; s++ {
			if ask(leaf, s).eax&0x1f == 0 {
				return
			}
		}
	}
	if maxBasic >= leafCaches {
		subleaves(leafCaches)
	}
	if maxBasic >= leafX2APIC {
		ask(leafX2APIC, 0)
	}
	for _, leaf := range []uint32{leafExtFeat, leafL1, leafL2L3, leafSizes, leafAMDTopo} {
		if maxExt >= leaf {
			ask(leaf, 0)
		}
	}
	if maxExt >= leafAMDCaches {
		subleaves(leafAMDCaches)
	}
	return l
}

// ErrCPUID reports CPUID answers the decoder cannot make sense of; it is
// wrapped with the CPU and the leaf.
var ErrCPUID = errors.New("CPUID describes no valid cache")

// cpuidVendor is what the decoder distinguishes among vendors.
type cpuidVendor int

const (
	vendorIntelLike cpuidVendor = iota // leaf 4
	vendorAMD                          // leaf 0x8000001D or the legacy leaves
)

// processor is what leaves 0, 1 and 0x80000000 say about one CPU.
type processor struct {
	vendor           cpuidVendor
	family           uint32
	maxBasic, maxExt uint32
}

func identify(l leaves) processor {
	v := l.get(leafVendor, 0)
	name := string(le32(v.ebx)) + string(le32(v.edx)) + string(le32(v.ecx))
	p := processor{maxBasic: v.eax, maxExt: l.get(leafExtMax, 0).eax}
	if name == "AuthenticAMD" || name == "HygonGenuine" {
		p.vendor = vendorAMD
	}
	// AMD repeats leaf 1's signature in 0x80000001 EAX; hypervisor CPU
	// templates may mask leaf 1's (Firecracker's T2A shows an Intel one).
	var sig uint32
	if p.maxBasic >= leafFeatures {
		sig = l.get(leafFeatures, 0).eax
	}
	if ext := l.get(leafExtFeat, 0).eax; p.vendor == vendorAMD && p.maxExt >= leafExtFeat && ext != 0 {
		sig = ext
	}
	p.family = sig >> 8 & 0xf
	if p.family == 0xf {
		p.family += sig >> 20 & 0xff
	}
	return p
}

func le32(x uint32) []byte { return []byte{byte(x), byte(x >> 8), byte(x >> 16), byte(x >> 24)} }

// cacheDesc is one cache as a CPU describes it.
type cacheDesc struct {
	level, line int
	typ         string
	size        int64
	// shift: CPUs whose APIC ids agree above this many low bits share
	// the instance.
	shift uint
	total bool // the size is the processor's whole L3, not this instance's
}

// describe decodes the caches one CPU's leaves list.
func describe(l leaves) ([]cacheDesc, error) {
	p := identify(l)
	if p.vendor == vendorAMD {
		topoext := p.maxExt >= leafExtFeat && l.get(leafExtFeat, 0).ecx&(1<<22) != 0
		if topoext && p.maxExt >= leafAMDCaches && l.get(leafAMDCaches, 0).eax&0x1f != 0 {
			return deterministic(l, leafAMDCaches)
		}
		// Without topology extensions (hypervisors often clear the bit, or
		// answer the leaf with zeros) the legacy leaves still describe the
		// caches, as hwloc reads them.
		return legacyAMD(l, p), nil
	}
	if p.maxBasic < leafCaches {
		return nil, nil
	}
	return deterministic(l, leafCaches)
}

// deterministic decodes leaf 4 or 0x8000001D: per subleaf, EAX[4:0] the
// type (0 ends the list), EAX[7:5] the level, EAX[25:14] the logical
// processors sharing it minus one; EBX[11:0] the line size, EBX[21:12]
// the partitions and EBX[31:22] the ways, each minus one; ECX the sets
// minus one.
func deterministic(l leaves, leaf uint32) ([]cacheDesc, error) {
	var out []cacheDesc
	for s := uint32(0); s < maxSubleaves; s++ {
		r := l.get(leaf, s)
		var d cacheDesc
		switch r.eax & 0x1f {
		case 0:
			return out, nil
		case 1:
			d.typ = Data
		case 2:
			d.typ = Instruction
		case 3:
			d.typ = Unified
		default:
			return nil, fmt.Errorf("leaf %#x subleaf %d: cache type %d: %w", leaf, s, r.eax&0x1f, ErrCPUID)
		}
		d.level = int(r.eax >> 5 & 7)
		if d.level == 0 {
			return nil, fmt.Errorf("leaf %#x subleaf %d: cache level 0: %w", leaf, s, ErrCPUID)
		}
		d.line = int(r.ebx&0xfff) + 1
		size, ok := product(uint64(d.line), uint64(r.ebx>>12&0x3ff)+1, uint64(r.ebx>>22)+1, uint64(r.ecx)+1)
		if !ok {
			return nil, fmt.Errorf("leaf %#x subleaf %d: a cache of more than %d bytes: %w", leaf, s, int64(maxCacheSize), ErrCPUID)
		}
		d.size = size
		d.shift = ceilLog2(r.eax>>14&0xfff + 1)
		out = append(out, d)
	}
	return out, nil
}

// product multiplies the factors, false if the result exceeds maxCacheSize.
func product(factors ...uint64) (int64, bool) {
	p := uint64(1)
	for _, f := range factors {
		hi, lo := bits.Mul64(p, f)
		if hi != 0 || lo > maxCacheSize {
			return 0, false
		}
		p = lo
	}
	return int64(p), true
}

// ceilLog2 is the number of low APIC id bits n sharers span: n rounded up
// to a power of two, as a shift.
func ceilLog2(n uint32) uint {
	if n <= 1 {
		return 0
	}
	return uint(bits.Len32(n - 1))
}

// legacyAMD decodes leaves 0x80000005 and 0x80000006 (AMD APM vol. 3,
// E.4.5–E.4.6). An absent cache has size 0 (L1) or associativity 0 (L2,
// L3). The L3 field holds the whole processor's L3 in 512 KiB units: on
// family 17h and later (Zen, and Hygon's family 18h) the L3 is split among
// core complexes this leaf does not list — an EPYC 7R13 reports 192 MB
// here and 32 MB per instance in leaf 0x8000001D — so its size is marked
// total there.
func legacyAMD(l leaves, p processor) []cacheDesc {
	var out []cacheDesc
	add := func(level int, typ string, size int64, line uint32, shift uint, total bool) {
		if size > 0 {
			out = append(out, cacheDesc{level: level, typ: typ, size: size, line: int(line & 0xff), shift: shift, total: total})
		}
	}
	if p.maxExt >= leafL1 {
		r := l.get(leafL1, 0)
		add(1, Data, int64(r.ecx>>24)<<10, r.ecx, 0, false)
		add(1, Instruction, int64(r.edx>>24)<<10, r.edx, 0, false)
	}
	if p.maxExt >= leafL2L3 {
		r := l.get(leafL2L3, 0)
		if r.ecx&0xf000 != 0 {
			add(2, Unified, int64(r.ecx>>16)<<10, r.ecx, 0, false)
		}
		if r.edx&0xf000 != 0 {
			add(3, Unified, int64(r.edx>>18)<<19, r.edx, packageShift(l, p), p.family >= 0x17)
		}
	}
	return out
}

// packageShift is the number of low APIC id bits that number the logical
// processors of one package, from leaf 0x80000008 ECX: ApicIdCoreIdSize
// (bits 15:12) when set, else enough bits for NC+1 cores (bits 7:0).
func packageShift(l leaves, p processor) uint {
	if p.maxExt < leafSizes {
		return 0
	}
	ecx := l.get(leafSizes, 0).ecx
	if n := uint(ecx >> 12 & 0xf); n != 0 {
		return n
	}
	return ceilLog2(ecx&0xff + 1)
}

// apicID is the CPU's APIC id according to CPUID: the x2APIC id (leaf 0xB)
// where present, AMD's extended APIC id (0x8000001E) with topology
// extensions, else the initial APIC id of leaf 1. The kernel's record of
// it is preferred: some hypervisors answer leaf 1 with the host's.
func apicID(l leaves) int {
	p := identify(l)
	if p.maxBasic >= leafX2APIC {
		if r := l.get(leafX2APIC, 0); r.ebx&0xffff != 0 {
			return int(r.edx)
		}
	}
	if p.vendor == vendorAMD && p.maxExt >= leafAMDTopo && l.get(leafExtFeat, 0).ecx&(1<<22) != 0 {
		return int(l.get(leafAMDTopo, 0).eax)
	}
	return int(l.get(leafFeatures, 0).ebx >> 24)
}

// decodeCPUID turns the CPUs' answers into cache instances: CPUs that
// describe the same cache (level, type and sharing) with the same APIC id
// bits above its sharing span share one instance.
func decodeCPUID(cpus []cpuidCPU) ([]Cache, error) {
	var ref leaves
	for _, c := range cpus {
		if c.leaves != nil {
			ref = c.leaves
			break
		}
	}
	if ref == nil {
		return nil, fmt.Errorf("no CPU could be queried: %w", ErrCPUID)
	}
	type key struct {
		level int
		typ   string
		shift uint
		id    int
	}
	type instance struct {
		cacheDesc
		cpus  []int
		first int // the CPU that first described it
	}
	found := map[key]*instance{}
	var order []key
	for _, c := range cpus {
		l := c.leaves
		if l == nil {
			l = ref // not queried (outside our cpuset): as the others
		}
		descs, err := describe(l)
		if err != nil {
			return nil, fmt.Errorf("CPU %d: %w", c.cpu, err)
		}
		apic := c.apic
		if apic < 0 {
			if c.leaves == nil {
				continue // neither queried nor known to the kernel: cannot be placed
			}
			apic = apicID(c.leaves)
		}
		for _, d := range descs {
			k := key{d.level, d.typ, d.shift, apic >> d.shift}
			in := found[k]
			if in == nil {
				in = &instance{cacheDesc: d, first: c.cpu}
				found[k] = in
				order = append(order, k)
			} else if in.size != d.size || in.line != d.line {
				return nil, fmt.Errorf("CPU %d describes the L%d %s cache it shares with CPU %d as %d bytes with %d-byte lines, CPU %d as %d bytes with %d-byte lines: %w",
					c.cpu, d.level, d.typ, in.first, d.size, d.line, in.first, in.size, in.line, ErrCPUID)
			}
			in.cpus = append(in.cpus, c.cpu)
		}
	}
	caches := make([]Cache, 0, len(order))
	for _, k := range order {
		in := found[k]
		slices.Sort(in.cpus)
		caches = append(caches, Cache{Level: in.level, Type: in.typ, Size: in.size, LineSize: in.line, CPUs: slices.Compact(in.cpus), Total: in.total})
	}
	slices.SortFunc(caches, func(a, b Cache) int {
		return cmp.Or(compareCaches(a, b), cmp.Compare(a.Size, b.Size))
	})
	return caches, nil
}
