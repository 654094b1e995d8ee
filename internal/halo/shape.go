package halo

import (
	"errors"
	"fmt"
	"math"
)

// MaxDims is the most dimensions a Shape may have; it keeps 3^N−1
// directions, and the plans built from them, small.
const MaxDims = 8

// Shape is the local array of one rank: its interior, the halo around it,
// and the layout of a cell. The full array is row-major like C and
// MPI_Cart: dimension 0 varies slowest, the components of a cell are
// innermost, so the cell with full-array index idx starts at byte
// ((…(idx[0]·F[1] + idx[1])·F[2] + …)·Components)·ElemSize, F = Full().
type Shape struct {
	Extents    []int // interior cells per dimension
	Width      int   // halo depth on each side of every dimension
	Components int   // values per cell
	ElemSize   int   // bytes per value
}

// Validate reports why s cannot describe an array, or nil.
func (s Shape) Validate() error {
	n := len(s.Extents)
	switch {
	case n == 0:
		return errors.New("halo: shape has no dimensions")
	case n > MaxDims:
		return fmt.Errorf("halo: shape has %d dimensions, at most %d", n, MaxDims)
	case s.Width < 1:
		return fmt.Errorf("halo: width %d, want ≥ 1", s.Width)
	case s.Components < 1:
		return fmt.Errorf("halo: %d components per cell, want ≥ 1", s.Components)
	case s.ElemSize < 1:
		return fmt.Errorf("halo: element size %d bytes, want ≥ 1", s.ElemSize)
	}
	size, ok := mul(s.Components, s.ElemSize)
	for d, e := range s.Extents {
		if e < 1 {
			return fmt.Errorf("halo: extent %d in dimension %d, want ≥ 1", e, d)
		}
		// A neighbour's halo is cut from this rank's interior.
		if s.Width > e {
			return fmt.Errorf("halo: width %d exceeds extent %d in dimension %d", s.Width, e, d)
		}
		if e > math.MaxInt-2*s.Width {
			ok = false
		}
		if ok {
			size, ok = mul(size, e+2*s.Width)
		}
	}
	if !ok {
		return fmt.Errorf("halo: array of %v cells with width %d is too large", s.Extents, s.Width)
	}
	return nil
}

// Full returns the extents of the full array: the interior plus the halo on
// both sides of every dimension.
func (s Shape) Full() []int {
	f := make([]int, len(s.Extents))
	for d, e := range s.Extents {
		f[d] = e + 2*s.Width
	}
	return f
}

// Cells returns the number of cells of the full array; like Bytes, it is
// meaningful only for a shape that Validate accepts, which rules out
// overflow.
func (s Shape) Cells() int {
	c := 1
	for _, e := range s.Extents {
		c *= e + 2*s.Width
	}
	return c
}

// Bytes returns the size of the full array in bytes.
func (s Shape) Bytes() int { return s.Cells() * s.cellBytes() }

func (s Shape) cellBytes() int { return s.Components * s.ElemSize }

// mul returns a·b for a, b ≥ 0 and whether it fits in an int.
func mul(a, b int) (int, bool) {
	if a != 0 && b > math.MaxInt/a {
		return 0, false
	}
	return a * b, true
}
