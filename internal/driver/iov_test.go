package driver

import (
	"bytes"
	"testing"
)

func TestAppendRange(t *testing.T) {
	iov := [][]byte{[]byte("abc"), nil, []byte("d"), {}, []byte("efgh"), []byte("ij")}
	flat := []byte("abcdefghij")
	tests := []struct {
		name   string
		off, n int
		parts  int
	}{
		{"all", 0, 10, 4},
		{"nothing", 3, 0, 0},
		{"inside one part", 5, 2, 1},
		{"from a part's start", 3, 1, 1},
		{"across an empty part", 2, 2, 2},
		{"across two empty parts", 2, 4, 3},
		{"tail", 8, 2, 1},
		{"to the end of a part", 4, 4, 1},
		{"past the end is cut", 7, 10, 2},
		{"at the end", 10, 5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keep := [][]byte{[]byte("kept")}
			got := AppendRange(keep, iov, tc.off, tc.n)
			if string(got[0]) != "kept" {
				t.Fatalf("dst's own parts changed: %q", got[0])
			}
			got = got[1:]
			if len(got) != tc.parts {
				t.Fatalf("%d parts, want %d: %q", len(got), tc.parts, got)
			}
			var cat []byte
			for _, b := range got {
				if len(b) == 0 {
					t.Fatal("an empty part was appended")
				}
				cat = append(cat, b...)
			}
			end := min(tc.off+tc.n, len(flat))
			if want := flat[min(tc.off, end):end]; !bytes.Equal(cat, want) {
				t.Fatalf("got %q, want %q", cat, want)
			}
			// No copy: the parts alias iov's memory.
			if len(got) > 0 {
				got[0][0] ^= 0xFF
				defer func() { got[0][0] ^= 0xFF }()
				var again []byte
				for _, b := range iov {
					again = append(again, b...)
				}
				if bytes.Equal(again, flat) {
					t.Fatal("the parts do not alias iov")
				}
			}
		})
	}
}
