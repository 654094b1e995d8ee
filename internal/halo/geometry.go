package halo

import "fmt"

// The boxes of an exchange. In dimension d, with n = Extents[d] and
// h = Width, a side's interior slab is the h interior cells next to that
// side — [h, 2h) on the low side, [n, n+h) on the high side — and its halo
// slab the h cells beyond them — [0, h) and [n+h, n+2h). Width ≤ n keeps
// every slab inside the interior, so what a neighbour receives is data
// this rank owns.

// SendBoxAll returns the box this rank sends towards direction o in the
// all-at-once exchange: per dimension, the interior slab on the side o
// points to, or the whole interior [h, h+n) where o is 0. The neighbour at
// offset o receives it into its RecvBoxAll(−o).
func SendBoxAll(s Shape, o []int) (Box, error) {
	if err := checkDirection(s, o); err != nil {
		return Box{}, err
	}
	b := newBox(len(o))
	for d, x := range o {
		b.Start[d], b.Count[d] = slab(s.Extents[d], s.Width, x, false)
	}
	return b, nil
}

// RecvBoxAll returns the halo box that the neighbour at offset o fills in
// the all-at-once exchange: per dimension, the halo slab on the side o
// points to, or the whole interior where o is 0. The halo boxes of all
// 3^N−1 directions tile the halo exactly.
func RecvBoxAll(s Shape, o []int) (Box, error) {
	if err := checkDirection(s, o); err != nil {
		return Box{}, err
	}
	b := newBox(len(o))
	for d, x := range o {
		b.Start[d], b.Count[d] = slab(s.Extents[d], s.Width, x, true)
	}
	return b, nil
}

// SendBoxPhased returns the box this rank sends towards sign·e_d in phase
// d of the dimension-ordered exchange: the interior slab on that side of
// dimension d, the whole full extent of the dimensions before d — their
// halos, filled by the earlier phases, carry the edges and corners on — and
// the interior of the dimensions after d.
func SendBoxPhased(s Shape, d, sign int) (Box, error) {
	return phasedBox(s, d, sign, false)
}

// RecvBoxPhased returns the halo box that the neighbour at sign·e_d fills
// in phase d of the dimension-ordered exchange: SendBoxPhased with the
// halo slab in dimension d. Over all phases these boxes tile the halo
// exactly: a halo cell arrives in the phase of its last halo dimension.
func RecvBoxPhased(s Shape, d, sign int) (Box, error) {
	return phasedBox(s, d, sign, true)
}

func phasedBox(s Shape, d, sign int, halo bool) (Box, error) {
	if err := s.Validate(); err != nil {
		return Box{}, err
	}
	n := len(s.Extents)
	if d < 0 || d >= n {
		return Box{}, fmt.Errorf("halo: phase %d of a %d-dimensional exchange", d, n)
	}
	if sign != -1 && sign != 1 {
		return Box{}, fmt.Errorf("halo: sign %d, want -1 or 1", sign)
	}
	b := newBox(n)
	h := s.Width
	for e, ext := range s.Extents {
		switch {
		case e < d:
			b.Start[e], b.Count[e] = 0, ext+2*h
		case e == d:
			b.Start[e], b.Count[e] = slab(ext, h, sign, halo)
		default:
			b.Start[e], b.Count[e] = h, ext
		}
	}
	return b, nil
}

// slab returns the start and count in one dimension of extent n and halo
// width h: the interior or halo slab on side x, or the interior if x is 0.
func slab(n, h, x int, halo bool) (start, count int) {
	switch {
	case x == 0:
		return h, n
	case x < 0 && halo:
		return 0, h
	case x < 0:
		return h, h
	case halo:
		return n + h, h
	default:
		return n, h
	}
}

func newBox(n int) Box {
	flat := make([]int, 2*n)
	return Box{Start: flat[:n:n], Count: flat[n:]}
}

func checkDirection(s Shape, o []int) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if len(o) != len(s.Extents) {
		return fmt.Errorf("halo: direction %v for a %d-dimensional shape", o, len(s.Extents))
	}
	_, err := DirectionIndex(o)
	return err
}
