package topo

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxCPU is the largest CPU number ParseCPUList accepts. Linux's NR_CPUS
// is at most 8192 on the architectures commtune runs on; the bound keeps a
// hostile list such as "0-4000000000" from allocating gigabytes.
const MaxCPU = 1<<16 - 1

// ParseCPUList parses a CPU list in the format the kernel writes to sysfs
// (cpulist_print, see Documentation/admin-guide/cputopology.rst): numbers
// and inclusive ranges separated by commas, such as "0-3,8,10-11". Leading
// and trailing white space (sysfs ends lines with '\n') is ignored and an
// empty list is valid: a memory-only NUMA node's cpulist is empty.
//
// The result is sorted and has no duplicates. Ranges must ascend, numbers
// are decimal digits only and at most MaxCPU; the kernel's stride syntax
// ("0-31:4/8") is not accepted, since sysfs never prints it.
func ParseCPUList(s string) ([]int, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return nil, nil
	}
	// A bitmap bounds the work by MaxCPU whatever the input repeats.
	var bits []uint64
	set := func(lo, hi int) {
		if need := hi/64 + 1; need > len(bits) {
			bits = append(bits, make([]uint64, need-len(bits))...)
		}
		for c := lo; c <= hi; c++ {
			bits[c/64] |= 1 << (c % 64)
		}
	}
	for field := range strings.SplitSeq(t, ",") {
		lo, hi, isRange := strings.Cut(field, "-")
		a, err := parseCPU(lo)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = parseCPU(hi); err != nil {
				return nil, fmt.Errorf("CPU list %q: %w", s, err)
			}
			if b < a {
				return nil, fmt.Errorf("CPU list %q: range %q descends", s, field)
			}
		}
		set(a, b)
	}
	var cpus []int
	for w, word := range bits {
		for i := range 64 {
			if word&(1<<i) != 0 {
				cpus = append(cpus, w*64+i)
			}
		}
	}
	return cpus, nil
}

// parseCPU parses one CPU number: decimal digits, at most MaxCPU.
func parseCPU(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("empty CPU number")
	}
	if len(s) > 10 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a CPU number", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > MaxCPU {
		return 0, fmt.Errorf("CPU %q is larger than %d", s, MaxCPU)
	}
	return n, nil
}

// FormatCPUList prints cpus, which must be sorted without duplicates, the
// way the kernel does and ParseCPUList reads: "0-3,8,10-11". An empty list
// prints as "".
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}
