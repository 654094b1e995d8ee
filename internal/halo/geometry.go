package halo

import (
	"errors"
	"fmt"
)

// The boxes of an exchange. In dimension d, with n = Extents[d] and
// h = Width, a side's interior slab is the h interior cells next to that
// side — [h, 2h) on the low side, [n, n+h) on the high side — and its halo
// slab the h cells beyond them — [0, h) and [n+h, n+2h). Width ≤ n keeps
// every slab inside the interior, so what a neighbour receives is data
// this rank owns.
//
// A halo cell lies past an open border when, in some dimension, it is in
// the halo slab of a side with no neighbour there (ProcNull). No plan
// fills such a cell or sends it on: it keeps whatever it held.

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
// 3^N−1 directions tile the halo exactly; those of the directions with a
// neighbour tile exactly the halo cells past no open border, since the
// neighbour at o is missing whenever one of o's faces is.
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
// dimension d, the interior of the dimensions after d, and in each
// dimension e before d the interior plus the halo slab of every side of e
// where nb has a neighbour — halos the earlier phases filled, which carry
// the edges and corners on. The halo slab of a side of e without a
// neighbour is left out: no phase fills it, so what it holds is stale and
// must neither travel nor be overwritten. The partner of a phase-d
// transfer has this rank's coordinate in every dimension but d, so it has
// neighbours on the same sides of e and cuts its box the same way.
func SendBoxPhased(s Shape, d, sign int, nb Neighbors) (Box, error) {
	return phasedBox(s, d, sign, nb, false)
}

// RecvBoxPhased returns the halo box that the neighbour at sign·e_d fills
// in phase d of the dimension-ordered exchange: SendBoxPhased with the
// halo slab in dimension d. Over the phases, the boxes of the transfers
// that have a neighbour tile exactly the halo cells past no open border: such
// a cell arrives in the phase of its last halo dimension.
func RecvBoxPhased(s Shape, d, sign int, nb Neighbors) (Box, error) {
	return phasedBox(s, d, sign, nb, true)
}

func phasedBox(s Shape, d, sign int, nb Neighbors, halo bool) (Box, error) {
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
	if nb == nil {
		return Box{}, errors.New("halo: no neighbour function")
	}
	b := newBox(n)
	h := s.Width
	for e, ext := range s.Extents {
		switch {
		case e < d:
			lo, err := hasNeighbor(nb, n, e, -1)
			if err != nil {
				return Box{}, err
			}
			hi, err := hasNeighbor(nb, n, e, 1)
			if err != nil {
				return Box{}, err
			}
			b.Start[e], b.Count[e] = h, ext
			if lo {
				b.Start[e], b.Count[e] = 0, b.Count[e]+h
			}
			if hi {
				b.Count[e] += h
			}
		case e == d:
			b.Start[e], b.Count[e] = slab(ext, h, sign, halo)
		default:
			b.Start[e], b.Count[e] = h, ext
		}
	}
	return b, nil
}

// hasNeighbor reports whether nb has a neighbour at sign·e_d of an
// n-dimensional grid.
func hasNeighbor(nb Neighbors, n, d, sign int) (bool, error) {
	o := make([]int, n)
	o[d] = sign
	switch peer := nb(o); {
	case peer == ProcNull:
		return false, nil
	case peer < 0:
		return false, fmt.Errorf("halo: neighbour at offset %v is rank %d, want ≥ 0 or ProcNull", o, peer)
	}
	return true, nil
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
