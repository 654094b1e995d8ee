// Package units parses and prints byte sizes the way commtune's flags,
// environment variables and tables show them: 8, 1K, 64KiB, 1.5M, 4MiB.
// Suffixes are binary (K = 1024), as message sizes are in HPC benchmarks.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var suffixes = []struct {
	name  string
	scale float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1},
}

// ParseSize parses a byte count such as "8", "1K", "64KiB", "1.5M" or
// "4MiB". Fractions are allowed with a suffix and rounded to whole bytes.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, fmt.Errorf("size %q: empty", s)
	}
	scale := 1.0
	for _, suf := range suffixes {
		if strings.HasSuffix(t, suf.name) {
			t = strings.TrimSpace(strings.TrimSuffix(t, suf.name))
			scale = suf.scale
			break
		}
	}
	if scale == 1 {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("size %q: want a non-negative byte count like 8, 64K or 4MiB", s)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("size %q: want a non-negative byte count like 8, 64K or 4MiB", s)
	}
	v := math.Round(f * scale)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return int64(v), nil
}

// ParseSizes parses a comma-separated list of sizes.
func ParseSizes(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		n, err := ParseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("size list %q is empty", s)
	}
	return out, nil
}

// FormatSize prints n compactly: exact multiples as 64K or 4M, other values
// with one decimal (12.3K), small values as plain bytes.
func FormatSize(n int64) string {
	switch {
	case n < 1<<10:
		return strconv.FormatInt(n, 10)
	case n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "G"
	case n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "M"
	case n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "K"
	case n < 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + "K"
	case n < 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + "M"
	default:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + "G"
	}
}
