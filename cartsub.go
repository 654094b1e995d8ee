package commtune

import (
	"fmt"
	"slices"
)

// Sub splits the grid into sub-grids that keep the dimensions d where
// remain[d] is true, as MPI_Cart_sub does, and returns the calling rank's:
// the ranks that share its coordinates in the dimensions dropped, ranked
// in row-major order of their coordinates in those kept, each kept
// dimension with its extent and periodicity. Dropping every dimension
// gives a grid of no dimensions and one rank, the caller; a Shift on it
// fails and its Neighbors are none.
//
// Every rank of the Cart must call it with the same remain, in the same
// order relative to the other Sub, Dup, Split, Create, Cart and
// Neighborhood calls on t.Comm(). Like Cart, it needs no communication
// (every rank computes its sub-grid from the coordinates), so nothing
// checks that the ranks agree; on an argument error it counts as no call.
func (t *Cart) Sub(remain []bool) (*Cart, error) {
	if t == nil {
		return nil, fmt.Errorf("commtune: Cart.Sub: nil Cart")
	}
	if err := t.comm.check(); err != nil {
		return nil, err
	}
	if len(remain) != len(t.dims) {
		return nil, fmt.Errorf("commtune: Cart.Sub: remain has %d entries for a Cart of %d dimensions", len(remain), len(t.dims))
	}
	s := &Cart{dims: []int{}, periods: []bool{}, coords: []int{}}
	var kept []int
	for d, keep := range remain {
		if keep {
			kept = append(kept, d)
			s.dims = append(s.dims, t.dims[d])
			s.periods = append(s.periods, t.periods[d])
			s.coords = append(s.coords, t.coords[d])
		}
	}
	// The members: the calling rank's coordinates with those kept running
	// through the sub-grid in row-major order.
	size := 1
	for _, e := range s.dims {
		size *= e
	}
	world := make([]int, size)
	coords := slices.Clone(t.coords)
	for i := range world {
		rest := i
		for k := len(kept) - 1; k >= 0; k-- {
			coords[kept[k]] = rest % s.dims[k]
			rest /= s.dims[k]
		}
		r, err := t.Rank(coords)
		if err != nil {
			return nil, err // cannot happen: the coordinates lie within the grid
		}
		world[i] = t.comm.WorldRank(r)
	}
	in, err := t.comm.in.Derive(world)
	if err != nil {
		return nil, err
	}
	s.comm = wrap(in)
	return s, nil
}
