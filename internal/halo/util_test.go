package halo

import (
	"strings"
	"testing"
)

// offsetOf is the byte offset of the cell at full-array index idx, computed
// straight from the layout formula as an oracle for Runs.
func offsetOf(s Shape, idx []int) int {
	full := s.Full()
	off := 0
	for d, i := range idx {
		off = off*full[d] + i
	}
	return off * s.Components * s.ElemSize
}

// eachIndex calls fn with every index of the box start ≤ idx < start+count,
// in row-major order; fn must not keep idx.
func eachIndex(start, count []int, fn func(idx []int)) {
	for _, c := range count {
		if c <= 0 {
			return
		}
	}
	idx := append([]int(nil), start...)
	for {
		fn(idx)
		d := len(idx) - 1
		for ; d >= 0; d-- {
			if idx[d]++; idx[d] < start[d]+count[d] {
				break
			}
			idx[d] = start[d]
		}
		if d < 0 {
			return
		}
	}
}

// wantErr checks that err is an error of this package mentioning want, or
// nil if want is empty.
func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want == "":
	case err == nil:
		t.Fatalf("no error, want one mentioning %q", want)
	case !strings.HasPrefix(err.Error(), "halo: ") || !strings.Contains(err.Error(), want):
		t.Fatalf("error %q, want one starting \"halo: \" and mentioning %q", err, want)
	}
}
