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
	lo0 := func(o []int) bool { return o[0] == -1 }
	lo0hi1 := func(o []int) bool { return o[0] == -1 || o[1] == 1 }
	both0 := func(o []int) bool { return o[0] != 0 }
	for _, tc := range []struct {
		name       string
		open       func(o []int) bool
		d, sign    int
		send, recv Box
	}{
		{"every neighbour", nil, 0, -1, Box{[]int{1, 1, 1}, []int{1, 4, 2}}, Box{[]int{0, 1, 1}, []int{1, 4, 2}}},
		{"every neighbour", nil, 0, 1, Box{[]int{3, 1, 1}, []int{1, 4, 2}}, Box{[]int{4, 1, 1}, []int{1, 4, 2}}},
		{"every neighbour", nil, 1, -1, Box{[]int{0, 1, 1}, []int{5, 1, 2}}, Box{[]int{0, 0, 1}, []int{5, 1, 2}}},
		{"every neighbour", nil, 1, 1, Box{[]int{0, 4, 1}, []int{5, 1, 2}}, Box{[]int{0, 5, 1}, []int{5, 1, 2}}},
		{"every neighbour", nil, 2, -1, Box{[]int{0, 0, 1}, []int{5, 6, 1}}, Box{[]int{0, 0, 0}, []int{5, 6, 1}}},
		{"every neighbour", nil, 2, 1, Box{[]int{0, 0, 2}, []int{5, 6, 1}}, Box{[]int{0, 0, 3}, []int{5, 6, 1}}},
		// An open side leaves its halo slab out of the later phases.
		{"low side of 0 open", lo0, 0, 1, Box{[]int{3, 1, 1}, []int{1, 4, 2}}, Box{[]int{4, 1, 1}, []int{1, 4, 2}}},
		{"low side of 0 open", lo0, 1, -1, Box{[]int{1, 1, 1}, []int{4, 1, 2}}, Box{[]int{1, 0, 1}, []int{4, 1, 2}}},
		{"low side of 0 open", lo0, 2, 1, Box{[]int{1, 0, 2}, []int{4, 6, 1}}, Box{[]int{1, 0, 3}, []int{4, 6, 1}}},
		{"low of 0 and high of 1 open", lo0hi1, 1, -1, Box{[]int{1, 1, 1}, []int{4, 1, 2}}, Box{[]int{1, 0, 1}, []int{4, 1, 2}}},
		{"low of 0 and high of 1 open", lo0hi1, 2, -1, Box{[]int{1, 0, 1}, []int{4, 5, 1}}, Box{[]int{1, 0, 0}, []int{4, 5, 1}}},
		{"both sides of 0 open", both0, 1, 1, Box{[]int{1, 4, 1}, []int{3, 1, 2}}, Box{[]int{1, 5, 1}, []int{3, 1, 2}}},
		{"both sides of 0 open", both0, 2, 1, Box{[]int{1, 0, 2}, []int{3, 6, 1}}, Box{[]int{1, 0, 3}, []int{3, 6, 1}}},
	} {
		nb := fakeNeighbors(tc.open)
		send, err := SendBoxPhased(s, tc.d, tc.sign, nb)
		if err != nil || !boxEqual(send, tc.send) {
			t.Errorf("%s: SendBoxPhased(%d, %d) = %v, %v, want %v", tc.name, tc.d, tc.sign, send, err, tc.send)
		}
		recv, err := RecvBoxPhased(s, tc.d, tc.sign, nb)
		if err != nil || !boxEqual(recv, tc.recv) {
			t.Errorf("%s: RecvBoxPhased(%d, %d) = %v, %v, want %v", tc.name, tc.d, tc.sign, recv, err, tc.recv)
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

// faces is which sides of each dimension have a neighbour: bit 2d of a
// mask for the low side of dimension d, bit 2d+1 for the high one.
type faces struct {
	n, mask int
}

// open reports whether the side sign of dimension d has no neighbour.
func (f faces) open(d, sign int) bool {
	bit := 2 * d
	if sign > 0 {
		bit++
	}
	return f.mask>>bit&1 == 1
}

// neighbors is a neighbour function with these faces: the neighbour at o
// is missing if any face o crosses is.
func (f faces) neighbors() Neighbors {
	return fakeNeighbors(func(o []int) bool {
		for d, x := range o {
			if x != 0 && f.open(d, x) {
				return true
			}
		}
		return false
	})
}

// pastOpen reports whether halo cell idx lies past an open border: in the
// halo slab of a side without a neighbour in some dimension.
func (f faces) pastOpen(s Shape, idx []int) bool {
	for d, i := range idx {
		if i < s.Width && f.open(d, -1) || i >= s.Width+s.Extents[d] && f.open(d, 1) {
			return true
		}
	}
	return false
}

// eachFaces calls fn with every pattern of missing neighbours of an
// n-dimensional grid.
func eachFaces(n int, fn func(f faces)) {
	for mask := range 1 << (2 * n) {
		fn(faces{n, mask})
	}
}

// checkTiling checks that the receive boxes hold every halo cell past no
// open border once and no other cell, and the send boxes only interior
// cells for all-at-once.
func checkTiling(t *testing.T, s Shape, f faces, recv, send []Box, sendInterior bool) {
	t.Helper()
	rc, sc := cover(t, s, recv), cover(t, s, send)
	zero := make([]int, len(s.Extents))
	eachIndex(zero, s.Full(), func(idx []int) {
		off := offsetOf(s, idx)
		in := interior(s, idx)
		want := 1
		if in || f.pastOpen(s, idx) {
			want = 0
		}
		if rc[off] != want {
			t.Errorf("%v, faces %b: cell %v is in %d receive boxes, want %d", s.Extents, f.mask, idx, rc[off], want)
		}
		if sendInterior && !in && sc[off] > 0 {
			t.Errorf("%v, faces %b: halo cell %v is sent", s.Extents, f.mask, idx)
		}
	})
}

func TestTilingAll(t *testing.T) {
	for _, s := range tilingShapes {
		eachFaces(len(s.Extents), func(f faces) {
			nb := f.neighbors()
			var recv, send []Box
			for _, o := range Directions(len(s.Extents)) {
				sb, err1 := SendBoxAll(s, o)
				rb, err2 := RecvBoxAll(s, o)
				peer, err3 := RecvBoxAll(s, negate(o))
				if err1 != nil || err2 != nil || err3 != nil {
					t.Fatal(err1, err2, err3)
				}
				// What goes towards o lands in the neighbour's halo on side −o.
				if !slices.Equal(sb.Count, peer.Count) {
					t.Errorf("%v: send box %v towards %v, neighbour's receive box %v", s.Extents, sb, o, peer)
				}
				if nb(o) != ProcNull {
					recv, send = append(recv, rb), append(send, sb)
				}
			}
			checkTiling(t, s, f, recv, send, true)
		})
	}
}

// TestTilingPhased checks the phased boxes for every pattern of missing
// neighbours: the partners' boxes match, a phase receives into nothing it
// sends, the receive boxes tile the halo past no open border, and every
// cell a phase sends is interior or was received by an earlier phase —
// so nothing stale travels, a ghost past an open border least of all.
func TestTilingPhased(t *testing.T) {
	for _, s := range tilingShapes {
		eachFaces(len(s.Extents), func(f faces) {
			nb := f.neighbors()
			filled := map[int]bool{}
			zero := make([]int, len(s.Extents))
			eachIndex(zero, s.Full(), func(idx []int) {
				if interior(s, idx) {
					filled[offsetOf(s, idx)] = true
				}
			})
			var recv []Box
			for d := range s.Extents {
				var phaseRecv, phaseSend []Box
				for _, sign := range []int{-1, 1} {
					if f.open(d, sign) {
						continue
					}
					sb, err1 := SendBoxPhased(s, d, sign, nb)
					rb, err2 := RecvBoxPhased(s, d, sign, nb)
					// The partner has the same faces in every dimension
					// but d, the only ones its box depends on besides d.
					peer, err3 := RecvBoxPhased(s, d, -sign, nb)
					if err1 != nil || err2 != nil || err3 != nil {
						t.Fatal(err1, err2, err3)
					}
					if !slices.Equal(sb.Count, peer.Count) {
						t.Errorf("%v, faces %b: phase %d: send box %v towards %d, neighbour's receive box %v", s.Extents, f.mask, d, sb, sign, peer)
					}
					phaseRecv, phaseSend = append(phaseRecv, rb), append(phaseSend, sb)
				}
				// A phase must not receive into what it sends.
				for _, r := range phaseRecv {
					for _, b := range phaseSend {
						if overlap(r, b) {
							t.Errorf("%v, faces %b: phase %d receives into %v and sends %v", s.Extents, f.mask, d, r, b)
						}
					}
				}
				for off := range cover(t, s, phaseSend) {
					if !filled[off] {
						t.Errorf("%v, faces %b: phase %d sends byte %d, which nothing filled", s.Extents, f.mask, d, off)
					}
				}
				for off := range cover(t, s, phaseRecv) {
					filled[off] = true
				}
				recv = append(recv, phaseRecv...)
			}
			checkTiling(t, s, f, recv, nil, false)
		})
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
	every := fakeNeighbors(nil)
	for _, tc := range []struct {
		shape   Shape
		d, sign int
		nb      Neighbors
		err     string
	}{
		{bad, 0, 1, every, "width 4 exceeds"},
		{s, -1, 1, every, "phase -1 of a 2-dimensional exchange"},
		{s, 2, 1, every, "phase 2 of a 2-dimensional exchange"},
		{s, 0, 0, every, "sign 0"},
		{s, 1, 2, every, "sign 2"},
		{s, 1, 1, nil, "no neighbour function"},
		{s, 1, 1, func([]int) int { return -2 }, "is rank -2, want ≥ 0 or ProcNull"},
	} {
		_, err := SendBoxPhased(tc.shape, tc.d, tc.sign, tc.nb)
		wantErr(t, err, tc.err)
		_, err = RecvBoxPhased(tc.shape, tc.d, tc.sign, tc.nb)
		wantErr(t, err, tc.err)
	}
}
