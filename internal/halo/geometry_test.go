package halo

import (
	"slices"
	"testing"
)

func TestBoxesAll(t *testing.T) {
	s := Shape{Extents: []int{3, 4}, Width: 1, Components: 1, ElemSize: 8} // full [5 6]
	w := Shape{Extents: []int{3, 4}, Width: 2, Components: 2, ElemSize: 4} // full [7 8]
	s1 := Shape{Extents: []int{5}, Width: 2, Components: 1, ElemSize: 8}   // full [9]
	for _, tc := range []struct {
		shape      Shape
		o          []int
		send, recv Box
	}{
		{s, []int{-1, 0}, Box{[]int{1, 1}, []int{1, 4}}, Box{[]int{0, 1}, []int{1, 4}}},
		{s, []int{1, 0}, Box{[]int{3, 1}, []int{1, 4}}, Box{[]int{4, 1}, []int{1, 4}}},
		{s, []int{0, -1}, Box{[]int{1, 1}, []int{3, 1}}, Box{[]int{1, 0}, []int{3, 1}}},
		{s, []int{0, 1}, Box{[]int{1, 4}, []int{3, 1}}, Box{[]int{1, 5}, []int{3, 1}}},
		{s, []int{1, 1}, Box{[]int{3, 4}, []int{1, 1}}, Box{[]int{4, 5}, []int{1, 1}}},
		{s, []int{-1, 1}, Box{[]int{1, 4}, []int{1, 1}}, Box{[]int{0, 5}, []int{1, 1}}},
		{w, []int{1, -1}, Box{[]int{3, 2}, []int{2, 2}}, Box{[]int{5, 0}, []int{2, 2}}},
		{w, []int{0, 1}, Box{[]int{2, 4}, []int{3, 2}}, Box{[]int{2, 6}, []int{3, 2}}},
		{s1, []int{-1}, Box{[]int{2}, []int{2}}, Box{[]int{0}, []int{2}}},
		{s1, []int{1}, Box{[]int{5}, []int{2}}, Box{[]int{7}, []int{2}}},
	} {
		send, err := SendBoxAll(tc.shape, tc.o)
		if err != nil || !boxEqual(send, tc.send) {
			t.Errorf("SendBoxAll(%v, %v) = %v, %v, want %v", tc.shape.Extents, tc.o, send, err, tc.send)
		}
		recv, err := RecvBoxAll(tc.shape, tc.o)
		if err != nil || !boxEqual(recv, tc.recv) {
			t.Errorf("RecvBoxAll(%v, %v) = %v, %v, want %v", tc.shape.Extents, tc.o, recv, err, tc.recv)
		}
	}
}

func TestBoxesPhased(t *testing.T) {
	s := Shape{Extents: []int{3, 4, 2}, Width: 1, Components: 1, ElemSize: 8} // full [5 6 4]
	for _, tc := range []struct {
		d, sign    int
		send, recv Box
	}{
		{0, -1, Box{[]int{1, 1, 1}, []int{1, 4, 2}}, Box{[]int{0, 1, 1}, []int{1, 4, 2}}},
		{0, 1, Box{[]int{3, 1, 1}, []int{1, 4, 2}}, Box{[]int{4, 1, 1}, []int{1, 4, 2}}},
		{1, -1, Box{[]int{0, 1, 1}, []int{5, 1, 2}}, Box{[]int{0, 0, 1}, []int{5, 1, 2}}},
		{1, 1, Box{[]int{0, 4, 1}, []int{5, 1, 2}}, Box{[]int{0, 5, 1}, []int{5, 1, 2}}},
		{2, -1, Box{[]int{0, 0, 1}, []int{5, 6, 1}}, Box{[]int{0, 0, 0}, []int{5, 6, 1}}},
		{2, 1, Box{[]int{0, 0, 2}, []int{5, 6, 1}}, Box{[]int{0, 0, 3}, []int{5, 6, 1}}},
	} {
		send, err := SendBoxPhased(s, tc.d, tc.sign)
		if err != nil || !boxEqual(send, tc.send) {
			t.Errorf("SendBoxPhased(%d, %d) = %v, %v, want %v", tc.d, tc.sign, send, err, tc.send)
		}
		recv, err := RecvBoxPhased(s, tc.d, tc.sign)
		if err != nil || !boxEqual(recv, tc.recv) {
			t.Errorf("RecvBoxPhased(%d, %d) = %v, %v, want %v", tc.d, tc.sign, recv, err, tc.recv)
		}
	}
}

func boxEqual(a, b Box) bool {
	return slices.Equal(a.Start, b.Start) && slices.Equal(a.Count, b.Count)
}

// tilingShapes are the shapes the tiling tests check every cell of.
var tilingShapes = []Shape{
	{Extents: []int{1}, Width: 1, Components: 1, ElemSize: 1},
	{Extents: []int{5}, Width: 2, Components: 1, ElemSize: 1},
	{Extents: []int{3, 4}, Width: 1, Components: 1, ElemSize: 1},
	{Extents: []int{2, 5}, Width: 2, Components: 1, ElemSize: 1},
	{Extents: []int{3, 4, 5}, Width: 2, Components: 1, ElemSize: 1},
	{Extents: []int{2, 1, 3}, Width: 1, Components: 1, ElemSize: 1},
	{Extents: []int{2, 3, 2, 2}, Width: 1, Components: 1, ElemSize: 1},
}

// interior reports whether full-array index idx is an interior cell.
func interior(s Shape, idx []int) bool {
	for d, i := range idx {
		if i < s.Width || i >= s.Width+s.Extents[d] {
			return false
		}
	}
	return true
}

// cover counts, per cell of s, how many of boxes hold it.
func cover(t *testing.T, s Shape, boxes []Box) map[int]int {
	t.Helper()
	c := map[int]int{}
	for _, b := range boxes {
		runs, err := Runs(s, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			for off := r.Off; off < r.Off+r.Len; off++ {
				c[off]++
			}
		}
	}
	return c
}

// checkTiling checks that the receive boxes hold every halo cell once and
// no interior cell, and the send boxes only interior cells for all-at-once.
func checkTiling(t *testing.T, s Shape, recv, send []Box, sendInterior bool) {
	t.Helper()
	rc, sc := cover(t, s, recv), cover(t, s, send)
	zero := make([]int, len(s.Extents))
	eachIndex(zero, s.Full(), func(idx []int) {
		off := offsetOf(s, idx)
		in := interior(s, idx)
		if want := map[bool]int{true: 0, false: 1}[in]; rc[off] != want {
			t.Errorf("%v: cell %v is in %d receive boxes, want %d", s.Extents, idx, rc[off], want)
		}
		if sendInterior && !in && sc[off] > 0 {
			t.Errorf("%v: halo cell %v is sent", s.Extents, idx)
		}
	})
}

func TestTilingAll(t *testing.T) {
	for _, s := range tilingShapes {
		var recv, send []Box
		for _, o := range Directions(len(s.Extents)) {
			sb, err1 := SendBoxAll(s, o)
			rb, err2 := RecvBoxAll(s, o)
			neg := make([]int, len(o))
			for d, x := range o {
				neg[d] = -x
			}
			peer, err3 := RecvBoxAll(s, neg)
			if err1 != nil || err2 != nil || err3 != nil {
				t.Fatal(err1, err2, err3)
			}
			// What goes towards o lands in the neighbour's halo on side −o.
			if !slices.Equal(sb.Count, peer.Count) {
				t.Errorf("%v: send box %v towards %v, neighbour's receive box %v", s.Extents, sb, o, peer)
			}
			recv, send = append(recv, rb), append(send, sb)
		}
		checkTiling(t, s, recv, send, true)
	}
}

func TestTilingPhased(t *testing.T) {
	for _, s := range tilingShapes {
		var recv []Box
		for d := range s.Extents {
			var phaseRecv, phaseSend []Box
			for _, sign := range []int{-1, 1} {
				sb, err1 := SendBoxPhased(s, d, sign)
				rb, err2 := RecvBoxPhased(s, d, sign)
				peer, err3 := RecvBoxPhased(s, d, -sign)
				if err1 != nil || err2 != nil || err3 != nil {
					t.Fatal(err1, err2, err3)
				}
				if !slices.Equal(sb.Count, peer.Count) {
					t.Errorf("%v: phase %d: send box %v towards %d, neighbour's receive box %v", s.Extents, d, sb, sign, peer)
				}
				phaseRecv, phaseSend = append(phaseRecv, rb), append(phaseSend, sb)
			}
			// A phase must not receive into what it sends.
			for _, r := range phaseRecv {
				for _, b := range phaseSend {
					if overlap(r, b) {
						t.Errorf("%v: phase %d receives into %v and sends %v", s.Extents, d, r, b)
					}
				}
			}
			recv = append(recv, phaseRecv...)
		}
		checkTiling(t, s, recv, nil, false)
	}
}

func TestBoxErrors(t *testing.T) {
	s := Shape{Extents: []int{3, 4}, Width: 1, Components: 1, ElemSize: 8}
	bad := Shape{Extents: []int{3, 4}, Width: 4, Components: 1, ElemSize: 8}
	for _, tc := range []struct {
		shape Shape
		o     []int
		err   string
	}{
		{bad, []int{1, 0}, "width 4 exceeds"},
		{s, []int{1}, "direction [1] for a 2-dimensional shape"},
		{s, nil, "direction [] for a 2-dimensional shape"},
		{s, []int{0, 0}, "is zero"},
		{s, []int{2, 0}, "outside {-1, 0, 1}"},
	} {
		_, err := SendBoxAll(tc.shape, tc.o)
		wantErr(t, err, tc.err)
		_, err = RecvBoxAll(tc.shape, tc.o)
		wantErr(t, err, tc.err)
	}
	for _, tc := range []struct {
		shape   Shape
		d, sign int
		err     string
	}{
		{bad, 0, 1, "width 4 exceeds"},
		{s, -1, 1, "phase -1 of a 2-dimensional exchange"},
		{s, 2, 1, "phase 2 of a 2-dimensional exchange"},
		{s, 0, 0, "sign 0"},
		{s, 1, 2, "sign 2"},
	} {
		_, err := SendBoxPhased(tc.shape, tc.d, tc.sign)
		wantErr(t, err, tc.err)
		_, err = RecvBoxPhased(tc.shape, tc.d, tc.sign)
		wantErr(t, err, tc.err)
	}
}
