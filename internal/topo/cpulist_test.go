package topo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/fuzzseed"
)

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr string // substring of the error; "" for success
	}{
		{"", nil, ""},
		{"\n", nil, ""}, // a memory-only NUMA node's cpulist
		{"0", []int{0}, ""},
		{"0\n", []int{0}, ""},
		{"0-1", []int{0, 1}, ""},
		{"0-3,8,10-11", []int{0, 1, 2, 3, 8, 10, 11}, ""},
		{"  2,0  ", []int{0, 2}, ""},               // unordered input comes out sorted
		{"0-3,2-5,3", []int{0, 1, 2, 3, 4, 5}, ""}, // overlaps are merged
		{"5-5", []int{5}, ""},
		{"007", []int{7}, ""},
		{"63-65", []int{63, 64, 65}, ""}, // across a bitmap word
		{strconv.Itoa(MaxCPU), []int{MaxCPU}, ""},
		{"3-1", nil, "descends"},
		{"1-", nil, "empty CPU number"},
		{"-1", nil, "empty CPU number"},
		{"1,,2", nil, "empty CPU number"},
		{"1,", nil, "empty CPU number"},
		{",1", nil, "empty CPU number"},
		{"1-2-3", nil, "not a CPU number"},
		{"a", nil, "not a CPU number"},
		{"+1", nil, "not a CPU number"},
		{"1 ,2", nil, "not a CPU number"},
		{"0x3", nil, "not a CPU number"},
		{"0-31:4/8", nil, "not a CPU number"}, // the kernel's stride syntax: not in sysfs
		{strconv.Itoa(MaxCPU + 1), nil, "larger than"},
		{"0-4000000000", nil, "larger than"},
		{"99999999999999999999", nil, "not a CPU number"},
	}
	for _, tc := range tests {
		t.Run(strconv.Quote(tc.in), func(t *testing.T) {
			got, err := ParseCPUList(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseCPUList(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("ParseCPUList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestFormatCPUList(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1}, "0-1"},
		{[]int{0, 2}, "0,2"},
		{[]int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"},
		{[]int{1, 3, 4, 5, 7}, "1,3-5,7"},
	}
	for _, tc := range tests {
		if got := FormatCPUList(tc.in); got != tc.want {
			t.Errorf("FormatCPUList(%v) = %q, want %q", tc.in, got, tc.want)
		}
		if back, err := ParseCPUList(tc.want); err != nil || !slices.Equal(back, tc.in) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tc.want, back, err, tc.in)
		}
	}
}

// FuzzParseCPUList checks that ParseCPUList never panics and that what it
// accepts is a sorted set of CPUs within bounds which prints back to a
// list that parses to the same set.
// The seed corpus is testdata/fuzz/FuzzParseCPUList (see TestFuzzSeeds).
func FuzzParseCPUList(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			if cpus != nil {
				t.Fatalf("ParseCPUList(%q) returned %v with error %v", s, cpus, err)
			}
			return
		}
		for i, c := range cpus {
			if c < 0 || c > MaxCPU || i > 0 && c <= cpus[i-1] {
				t.Fatalf("ParseCPUList(%q) = %v: not a sorted set within [0, %d]", s, cpus, MaxCPU)
			}
		}
		printed := FormatCPUList(cpus)
		back, err := ParseCPUList(printed)
		if err != nil || !slices.Equal(back, cpus) {
			t.Fatalf("ParseCPUList(%q) = %v prints as %q, which parses to %v, %v", s, cpus, printed, back, err)
		}
	})
}

// TestFuzzSeeds keeps testdata/fuzz/FuzzParseCPUList in step with the
// list forms sysfs writes, and near misses (go test -run FuzzSeeds
// -rewrite-seeds).
func TestFuzzSeeds(t *testing.T) {
	var seeds []fuzzseed.Seed
	for i, s := range []string{
		"", "0", "0-1\n", "0-3,8,10-11", "3-1", "1,,2", "0-65535", "65536",
		"0-31:4/8", "18446744073709551616", " 7 ", "1-2-3", "0,0,0-0",
	} {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed-%02d", i), Values: []any{s}})
	}
	fuzzseed.Sync(t, "FuzzParseCPUList", seeds)
}
