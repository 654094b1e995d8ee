package halo

import (
	"bytes"
	"math"
	"slices"
	"testing"
)

func TestRuns(t *testing.T) {
	// Full arrays: 2-D [4 5] of 1-byte cells, 2-D of 6-byte cells, 3-D [3 3 3].
	s2 := Shape{Extents: []int{2, 3}, Width: 1, Components: 1, ElemSize: 1}
	s2w := Shape{Extents: []int{2, 3}, Width: 1, Components: 3, ElemSize: 2}
	s3 := Shape{Extents: []int{1, 1, 1}, Width: 1, Components: 1, ElemSize: 1}
	s1 := Shape{Extents: []int{4}, Width: 2, Components: 2, ElemSize: 4}
	box := func(start, count []int) Box { return Box{Start: start, Count: count} }
	for _, tc := range []struct {
		name  string
		shape Shape
		box   Box
		want  []Run
	}{
		{"whole array", s2, box([]int{0, 0}, []int{4, 5}), []Run{{0, 20}}},
		{"whole array, wide cells", s2w, box([]int{0, 0}, []int{4, 5}), []Run{{0, 120}}},
		{"whole array, 3-D", s3, box([]int{0, 0, 0}, []int{3, 3, 3}), []Run{{0, 27}}},
		{"whole array, 1-D", s1, box([]int{0}, []int{8}), []Run{{0, 64}}},
		{"full rows", s2, box([]int{1, 0}, []int{2, 5}), []Run{{5, 10}}},
		{"full rows, wide cells", s2w, box([]int{1, 0}, []int{2, 5}), []Run{{30, 60}}},
		{"full planes", s3, box([]int{1, 0, 0}, []int{2, 3, 3}), []Run{{9, 18}}},
		{"part of a row", s2, box([]int{1, 1}, []int{1, 3}), []Run{{6, 3}}},
		{"interior", s2, box([]int{1, 1}, []int{2, 3}), []Run{{6, 3}, {11, 3}}},
		{"interior, wide cells", s2w, box([]int{1, 1}, []int{2, 3}), []Run{{36, 18}, {66, 18}}},
		{"column", s2, box([]int{0, 2}, []int{4, 1}), []Run{{2, 1}, {7, 1}, {12, 1}, {17, 1}}},
		{"column, wide cells", s2w, box([]int{0, 4}, []int{4, 1}), []Run{{24, 6}, {54, 6}, {84, 6}, {114, 6}}},
		{"single cell", s2, box([]int{3, 4}, []int{1, 1}), []Run{{19, 1}}},
		{"rows of a middle plane", s3, box([]int{1, 1, 0}, []int{1, 2, 3}), []Run{{12, 6}}},
		{"columns across planes", s3, box([]int{0, 1, 0}, []int{3, 1, 3}), []Run{{3, 3}, {12, 3}, {21, 3}}},
		{"pencil", s3, box([]int{0, 1, 2}, []int{3, 2, 1}), []Run{{5, 1}, {8, 1}, {14, 1}, {17, 1}, {23, 1}, {26, 1}}},
		{"1-D halo", s1, box([]int{6}, []int{2}), []Run{{48, 16}}},
		{"empty", s2, box([]int{1, 1}, []int{0, 3}), nil},
		{"empty at the end", s2, box([]int{4, 5}, []int{0, 0}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Runs(tc.shape, tc.box)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Runs = %v, want %v", got, tc.want)
			}
			if n, want := RunsBytes(got), boxCells(tc.box)*tc.shape.Components*tc.shape.ElemSize; n != want {
				t.Fatalf("RunsBytes = %d, want %d", n, want)
			}
		})
	}
}

func boxCells(b Box) int {
	n := 1
	for _, c := range b.Count {
		n *= c
	}
	return n
}

func TestRunsErrors(t *testing.T) {
	s := Shape{Extents: []int{2, 3}, Width: 1, Components: 1, ElemSize: 8} // full [4 5]
	for _, tc := range []struct {
		name  string
		shape Shape
		box   Box
		err   string
	}{
		{"invalid shape", Shape{Extents: []int{2}}, Box{[]int{0}, []int{1}}, "width 0"},
		{"zero box", s, Box{}, "0 starts and 0 counts for 2 dimensions"},
		{"too few counts", s, Box{[]int{0, 0}, []int{1}}, "2 starts and 1 counts"},
		{"too many starts", s, Box{[]int{0, 0, 0}, []int{1, 1}}, "3 starts and 2 counts"},
		{"negative start", s, Box{[]int{0, -1}, []int{1, 1}}, "start -1 count 1 leaves dimension 1"},
		{"negative count", s, Box{[]int{0, 0}, []int{-1, 1}}, "start 0 count -1 leaves dimension 0"},
		{"past the end", s, Box{[]int{0, 3}, []int{1, 3}}, "start 3 count 3 leaves dimension 1 of the full array (5 cells)"},
		{"start past the end", s, Box{[]int{5, 0}, []int{0, 1}}, "start 5 count 0"},
		{"huge count", s, Box{[]int{1, 0}, []int{math.MaxInt, 1}}, "leaves dimension 0"},
		{"huge start", s, Box{[]int{math.MaxInt, 0}, []int{1, 1}}, "leaves dimension 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs, err := Runs(tc.shape, tc.box)
			wantErr(t, err, tc.err)
			if runs != nil {
				t.Fatalf("runs %v with the error", runs)
			}
		})
	}
}

func TestPackUnpack(t *testing.T) {
	s := Shape{Extents: []int{3, 4, 2}, Width: 2, Components: 3, ElemSize: 2}
	src := make([]byte, s.Bytes())
	for i := range src {
		src[i] = byte(i*7 + 3)
	}
	boxes := []Box{
		{[]int{0, 0, 0}, []int{7, 8, 6}}, // whole array
		{[]int{2, 2, 2}, []int{3, 4, 2}}, // interior
		{[]int{0, 0, 0}, []int{2, 8, 6}}, // low halo of dimension 0
		{[]int{0, 3, 5}, []int{7, 2, 1}}, // columns
		{[]int{6, 7, 5}, []int{1, 1, 1}}, // last cell
	}
	for _, b := range boxes {
		runs, err := Runs(s, b)
		if err != nil {
			t.Fatal(err)
		}
		n := RunsBytes(runs)
		packed := make([]byte, n+5) // extra room stays untouched
		if got, err := Pack(packed, src, runs); err != nil || got != n {
			t.Fatalf("%v: Pack = %d, %v, want %d", b, got, err, n)
		}
		if !bytes.Equal(packed[n:], make([]byte, 5)) {
			t.Fatalf("%v: Pack wrote past the runs", b)
		}
		// The packed bytes are the box's cells in row-major order.
		var want []byte
		cb := s.Components * s.ElemSize
		eachIndex(b.Start, b.Count, func(idx []int) {
			off := offsetOf(s, idx)
			want = append(want, src[off:off+cb]...)
		})
		if !bytes.Equal(packed[:n], want) {
			t.Fatalf("%v: packed bytes are not the box in row-major order", b)
		}
		dst := make([]byte, s.Bytes())
		if got, err := Unpack(dst, packed, runs); err != nil || got != n {
			t.Fatalf("%v: Unpack = %d, %v, want %d", b, got, err, n)
		}
		inBox := make([]bool, len(dst))
		for _, r := range runs {
			for i := r.Off; i < r.Off+r.Len; i++ {
				inBox[i] = true
			}
		}
		for i := range dst {
			if inBox[i] && dst[i] != src[i] || !inBox[i] && dst[i] != 0 {
				t.Fatalf("%v: byte %d after Pack and Unpack is %d (in box %v)", b, i, dst[i], inBox[i])
			}
		}
	}
}

func TestPackUnpackErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		array     int // bytes of the array side
		packed    int // bytes of the packed side
		runs      []Run
		err       string
		unpackErr string
	}{
		{"no runs", 4, 0, nil, "", ""},
		{"fits exactly", 10, 6, []Run{{0, 2}, {6, 4}}, "", ""},
		{"run past the array", 10, 8, []Run{{0, 2}, {6, 5}}, "run 1 (offset 6, 5 bytes) leaves the 10-byte array", ""},
		{"negative offset", 10, 8, []Run{{-1, 2}}, "offset -1", ""},
		{"negative length", 10, 8, []Run{{1, -2}}, "-2 bytes", ""},
		{"offset past the array", 10, 8, []Run{{11, 0}}, "offset 11", ""},
		{"huge length", 10, 8, []Run{{1, math.MaxInt}}, "leaves the 10-byte array", ""},
		{"packed buffer too small", 10, 5, []Run{{0, 2}, {6, 4}}, "exceed the 5-byte packed buffer", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			array := bytes.Repeat([]byte{1}, tc.array)
			packed := bytes.Repeat([]byte{2}, tc.packed)
			n, err := Pack(packed, array, tc.runs)
			wantErr(t, err, tc.err)
			if err != nil && (n != 0 || !bytes.Equal(packed, bytes.Repeat([]byte{2}, tc.packed))) {
				t.Fatalf("Pack moved %d bytes before failing", n)
			}
			packed = bytes.Repeat([]byte{2}, tc.packed)
			n, err = Unpack(array, packed, tc.runs)
			wantErr(t, err, tc.err)
			if err != nil && (n != 0 || !bytes.Equal(array, bytes.Repeat([]byte{1}, tc.array))) {
				t.Fatalf("Unpack moved %d bytes before failing", n)
			}
		})
	}
}

// fuzzShapeBox decodes a small shape and box, valid or not, from bytes
// taken modulo their range: dimensions−1 (0–2), the interior extents−1
// (0–4), width (0–3), components−1 (0–2), element size (1, 2, 4, 8), then
// per dimension the box's start (full extent + 2 meaning −1) and count,
// which may stray past either end.
func fuzzShapeBox(data []byte) (Shape, Box) {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	n := next()%3 + 1
	s := Shape{Extents: make([]int, n)}
	for d := range s.Extents {
		s.Extents[d] = next()%5 + 1
	}
	s.Width = next() % 4
	s.Components = next()%3 + 1
	s.ElemSize = []int{1, 2, 4, 8}[next()%4]
	b := Box{Start: make([]int, n), Count: make([]int, n)}
	for d, f := range s.Full() {
		if b.Start[d] = next() % (f + 3); b.Start[d] == f+2 {
			b.Start[d] = -1
		}
		b.Count[d] = next() % (f + 2)
	}
	return s, b
}

// FuzzRuns checks that Runs covers exactly the bytes of the box's cells,
// each once, in increasing order with no two runs touching, and rejects
// exactly the shapes and boxes that are invalid.
func FuzzRuns(f *testing.F) {
	f.Add([]byte{})                                      // width 0
	f.Add([]byte{0, 4, 1, 0, 0, 0, 7})                   // whole 1-D array
	f.Add([]byte{1, 2, 3, 1, 2, 3, 1, 2, 1, 3})          // 2-D interior of wide cells
	f.Add([]byte{1, 2, 3, 1, 0, 0, 0, 4, 2, 1})          // 2-D column
	f.Add([]byte{2, 2, 3, 4, 2, 1, 3, 1, 3, 0, 8, 0, 9}) // 3-D box of whole planes
	f.Add([]byte{2, 0, 1, 2, 1, 0, 0, 0, 3, 1, 2, 2, 1}) // 3-D pencil
	f.Add([]byte{1, 0, 0, 3, 0, 0, 1, 1, 1, 1})          // width exceeds extent
	f.Add([]byte{1, 3, 3, 1, 0, 0, 7, 3, 0, 2})          // box past the end
	f.Add([]byte{0, 4, 1, 0, 0, 9, 2})                   // negative start
	f.Add([]byte{2, 4, 4, 4, 2, 2, 3, 0, 9, 0, 9, 0, 9}) // whole 3-D array
	f.Add([]byte{2, 4, 4, 4, 2, 2, 3, 2, 3, 2, 3, 2, 3}) // 3-D interior
	f.Fuzz(func(t *testing.T, data []byte) {
		s, b := fuzzShapeBox(data)
		runs, err := Runs(s, b)
		valid := s.Validate() == nil
		if valid {
			for d, f := range s.Full() {
				valid = valid && b.Start[d] >= 0 && b.Count[d] >= 0 && b.Start[d]+b.Count[d] <= f
			}
		}
		if !valid {
			if err == nil {
				t.Fatalf("%+v %v: no error", s, b)
			}
			return
		}
		if err != nil {
			t.Fatalf("%+v %v: %v", s, b, err)
		}
		cover := make([]int, s.Bytes())
		end := -1
		for _, r := range runs {
			if r.Len <= 0 || r.Off <= end || r.Off+r.Len > len(cover) {
				t.Fatalf("%+v %v: run %v after offset %d in runs %v", s, b, r, end, runs)
			}
			for i := r.Off; i < r.Off+r.Len; i++ {
				cover[i]++
			}
			end = r.Off + r.Len
		}
		cb := s.Components * s.ElemSize
		eachIndex(b.Start, b.Count, func(idx []int) {
			off := offsetOf(s, idx)
			for i := off; i < off+cb; i++ {
				cover[i]--
			}
		})
		for i, c := range cover {
			if c != 0 {
				t.Fatalf("%+v %v: byte %d covered %+d times too often", s, b, i, c)
			}
		}
		if n := RunsBytes(runs); n != boxCells(b)*cb {
			t.Fatalf("%+v %v: RunsBytes %d, box holds %d", s, b, n, boxCells(b)*cb)
		}
	})
}
