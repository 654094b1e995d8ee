package halo

import (
	"bytes"
	"testing"
)

func TestSegments(t *testing.T) {
	data := []byte("abcdefghij")
	for _, tc := range []struct {
		name string
		runs []Run
		want []string
		bad  bool
	}{
		{"none", nil, []string{}, false},
		{"two", []Run{{0, 2}, {5, 3}}, []string{"ab", "fgh"}, false},
		{"empty run", []Run{{4, 0}, {9, 1}}, []string{"", "j"}, false},
		{"past the end", []Run{{8, 3}}, nil, true},
		{"negative", []Run{{-1, 2}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			segs, err := Segments(data, tc.runs)
			if (err != nil) != tc.bad {
				t.Fatalf("err %v, want error %v", err, tc.bad)
			}
			if tc.bad {
				return
			}
			if len(segs) != len(tc.want) {
				t.Fatalf("%d segments, want %d", len(segs), len(tc.want))
			}
			for i, s := range segs {
				if string(s) != tc.want[i] || cap(s) != len(s) {
					t.Fatalf("segment %d = %q (cap %d), want %q with no room past it", i, s, cap(s), tc.want[i])
				}
			}
		})
	}
}

func TestCopySegments(t *testing.T) {
	split := func(b []byte, cuts ...int) [][]byte {
		var out [][]byte
		prev := 0
		for _, c := range cuts {
			out = append(out, b[prev:c])
			prev = c
		}
		return append(out, b[prev:])
	}
	src := []byte("0123456789")
	for _, tc := range []struct {
		name     string
		dstCuts  []int
		srcCuts  []int
		dstLen   int
		wantN    int
		wantDest string
	}{
		{"same cuts", []int{3, 7}, []int{3, 7}, 10, 10, "0123456789"},
		{"different cuts", []int{1, 2, 9}, []int{5}, 10, 10, "0123456789"},
		{"empty segments", []int{0, 0, 4, 4}, []int{2, 2, 10}, 10, 10, "0123456789"},
		{"shorter destination", []int{2}, []int{6}, 4, 4, "0123"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]byte, tc.dstLen)
			var cuts []int
			for _, c := range tc.dstCuts {
				cuts = append(cuts, min(c, tc.dstLen))
			}
			n := CopySegments(split(dst, cuts...), split(src, tc.srcCuts...))
			if n != tc.wantN || !bytes.Equal(dst, []byte(tc.wantDest)) {
				t.Fatalf("copied %d into %q, want %d into %q", n, dst, tc.wantN, tc.wantDest)
			}
		})
	}
}
