package core

import (
	"bytes"
	"testing"
	"unsafe"
)

// cut splits flat into segments of the given lengths (0: an empty one),
// each aliasing flat.
func cut(flat []byte, sizes ...int) [][]byte {
	var segs [][]byte
	for _, n := range sizes {
		segs = append(segs, flat[:n:n])
		flat = flat[n:]
	}
	return segs
}

func flatten(segs [][]byte) []byte {
	var b []byte
	for _, s := range segs {
		b = append(b, s...)
	}
	return b
}

func TestSegsLen(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int
		want  int
	}{
		{"none", nil, 0},
		{"empty ones", []int{0, 0}, 0},
		{"mixed", []int{3, 0, 5, 1}, 9},
	}
	for _, tc := range tests {
		if got := segsLen(cut(make([]byte, 64), tc.sizes...)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestGatherScatterSegs(t *testing.T) {
	msg := []byte("0123456789")
	tests := []struct {
		name  string
		sizes []int // segments over msg (gather) or over the receive (scatter)
		room  int   // gather: dst length; scatter: src length taken from msg
		want  int   // bytes copied
	}{
		{"exact", []int{3, 4, 3}, 10, 10},
		{"with empty segments", []int{0, 3, 0, 0, 7, 0}, 10, 10},
		{"short destination/source", []int{3, 4, 3}, 5, 5},
		{"stops at a segment boundary", []int{3, 4, 3}, 7, 7},
		{"nothing", nil, 10, 0},
		{"zero room", []int{10}, 0, 0},
		{"one byte segments", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 10, 10},
	}
	for _, tc := range tests {
		t.Run("gather/"+tc.name, func(t *testing.T) {
			total := 0
			for _, n := range tc.sizes {
				total += n
			}
			segs := cut(msg[:total], tc.sizes...)
			dst := bytes.Repeat([]byte{'#'}, tc.room+2)
			n := gatherSegs(dst[:tc.room], segs)
			want := min(tc.want, total)
			if n != want || !bytes.Equal(dst[:n], msg[:n]) || !bytes.Equal(dst[n:], bytes.Repeat([]byte{'#'}, len(dst)-n)) {
				t.Fatalf("copied %d (%q), want %d", n, dst, want)
			}
		})
		t.Run("scatter/"+tc.name, func(t *testing.T) {
			total := 0
			for _, n := range tc.sizes {
				total += n
			}
			back := bytes.Repeat([]byte{'#'}, total+2)
			segs := cut(back[1:1+total], tc.sizes...)
			n := scatterSegs(segs, msg[:min(tc.room, len(msg))])
			want := min(tc.room, total)
			if n != want {
				t.Fatalf("copied %d, want %d", n, want)
			}
			got := flatten(segs)
			if !bytes.Equal(got[:n], msg[:n]) || back[0] != '#' || back[len(back)-1] != '#' {
				t.Fatalf("segments hold %q", back)
			}
			for _, c := range got[n:] {
				if c != '#' {
					t.Fatalf("bytes past the source were written: %q", back)
				}
			}
		})
	}
}

func TestSubSegs(t *testing.T) {
	msg := []byte("0123456789")
	tests := []struct {
		name    string
		sizes   []int
		off, n  int
		same    bool // the list itself comes back
		segsOut int
	}{
		{"whole, no empty", []int{3, 7}, 0, 10, true, 2},
		{"whole, n past the end", []int{3, 7}, 0, 99, true, 2},
		{"whole with an empty one", []int{3, 0, 7}, 0, 10, false, 2},
		{"prefix", []int{3, 7}, 0, 5, false, 2},
		{"middle", []int{3, 4, 3}, 2, 6, false, 3},
		{"inside one", []int{10}, 2, 3, false, 1},
		{"nothing", []int{3, 7}, 4, 0, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			segs := cut(msg, tc.sizes...)
			got := subSegs(segs, tc.off, tc.n)
			if same := len(got) > 0 && &got[0] == &segs[0]; same != tc.same {
				t.Fatalf("returned the list itself: %v, want %v", same, tc.same)
			}
			if len(got) != tc.segsOut {
				t.Fatalf("%d segments, want %d", len(got), tc.segsOut)
			}
			end := min(tc.off+tc.n, len(msg))
			if !bytes.Equal(flatten(got), msg[tc.off:end]) {
				t.Fatalf("got %q, want %q", flatten(got), msg[tc.off:end])
			}
			for _, s := range got {
				if len(s) == 0 {
					t.Fatal("an empty segment")
				}
				p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
				base := uintptr(unsafe.Pointer(&msg[0]))
				if p < base || p >= base+uintptr(len(msg)) {
					t.Fatal("a segment was copied")
				}
			}
		})
	}
	segs := cut(msg, 3, 7)
	if a := testing.AllocsPerRun(100, func() { subSegs(segs, 0, 10) }); a != 0 {
		t.Fatalf("the whole list allocates %.0f times", a)
	}
}

func TestSegCursor(t *testing.T) {
	msg := []byte("abcdefghij")
	segs := cut(msg, 0, 3, 0, 0, 4, 1, 2, 0)
	type ask struct {
		off, n int
		want   string
	}
	tests := []struct {
		name string
		asks []ask
	}{
		{"in order, piece by piece", []ask{{0, 10, "abc"}, {3, 7, "defg"}, {7, 3, "h"}, {8, 2, "ij"}}},
		{"limited by n", []ask{{0, 2, "ab"}, {2, 8, "c"}, {3, 1, "d"}, {4, 6, "efg"}}},
		{"backwards starts over", []ask{{8, 2, "ij"}, {1, 9, "bc"}, {5, 1, "f"}, {0, 1, "a"}}},
		{"past the end", []ask{{10, 1, ""}, {3, 1, "d"}, {12, 4, ""}}},
		{"no bytes asked", []ask{{3, 0, ""}}},
		{"inside a segment", []ask{{5, 5, "fg"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c segCursor
			for _, a := range tc.asks {
				got := c.piece(segs, a.off, a.n)
				if string(got) != a.want {
					t.Fatalf("piece(%d, %d) = %q, want %q", a.off, a.n, got, a.want)
				}
				if len(got) > 0 && &got[0] != &msg[a.off] {
					t.Fatalf("piece(%d, %d) is not the segment's own memory", a.off, a.n)
				}
			}
		})
	}
	var c segCursor
	if got := c.piece(nil, 0, 4); got != nil {
		t.Fatalf("no segments: %q", got)
	}
}
