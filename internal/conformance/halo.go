package conformance

import (
	"context"
	"fmt"

	"github.com/commtune/commtune"
)

// HaloGrid is a process grid the halo check runs on.
type HaloGrid struct {
	Dims    []int
	Periods []bool
}

// HaloGrids returns the grids of n ranks the halo check covers: one
// dimension, two and three (DimsCreate's shape and a degenerate one), each
// with open, periodic and mixed borders — periodic first, and beyond one
// dimension open first, so that an open dimension comes before one with
// neighbours, where a ghost past the open border could travel on to a
// neighbour.
func HaloGrids(n int) []HaloGrid {
	var out []HaloGrid
	for _, nd := range []int{1, 2, 3} {
		dims := make([]int, nd)
		if err := commtune.DimsCreate(n, dims); err != nil {
			continue
		}
		shapes := [][]int{dims}
		if nd == 2 {
			shapes = append(shapes, []int{1, n}) // 1×5 and the like
		}
		patterns := []func(int) bool{
			func(int) bool { return false },
			func(int) bool { return true },
			func(i int) bool { return i%2 == 0 },
		}
		if nd > 1 {
			patterns = append(patterns, func(i int) bool { return i%2 == 1 })
		}
		for _, d := range shapes {
			for _, p := range patterns {
				per := make([]bool, nd)
				for i := range per {
					per[i] = p(i)
				}
				out = append(out, HaloGrid{Dims: d, Periods: per})
			}
		}
	}
	return out
}

// OpenFirst reports whether g has an open dimension before a dimension
// with neighbours (more than one rank, or periodic): there a halo past the
// open border borders the halo a later dimension fills.
func (g HaloGrid) OpenFirst() bool {
	for e, p := range g.Periods {
		if p {
			continue
		}
		for d := e + 1; d < len(g.Dims); d++ {
			if g.Dims[d] > 1 || g.Periods[d] {
				return true
			}
		}
	}
	return false
}

// HaloCheck exchanges, with every implementation, on every grid of
// HaloGrids(c.Size()) and with halo widths 1 and 2 and 1 and 3 components,
// an array whose every interior value is unique to its global cell,
// component and round, and whose every halo cell starts with a sentinel
// unique to its rank, cell and component, below every interior value. It
// checks every cell against what the neighbour owning it holds, byte for
// byte, after each of two rounds (the second rewrites only the interior):
// past an open border a cell must still hold its own rank's sentinel, so
// a ghost copied from any other cell or rank shows.
func HaloCheck(ctx context.Context, c *commtune.Comm) (checks int, err error) {
	for _, g := range HaloGrids(c.Size()) {
		for _, impl := range commtune.HaloImpls() {
			for _, width := range []int{1, 2} {
				for _, comps := range []int{1, 3} {
					if err := haloCase(ctx, c, g, impl, width, comps); err != nil {
						return checks, fmt.Errorf("dims %v periods %v %s width %d components %d: %w", g.Dims, g.Periods, impl, width, comps, err)
					}
					checks++
				}
			}
		}
	}
	return checks, nil
}

func haloCase(ctx context.Context, c *commtune.Comm, g HaloGrid, impl string, width, comps int) error {
	cart, err := c.Cart(g.Dims, g.Periods)
	if err != nil {
		return err
	}
	nd := len(g.Dims)
	ext := make([]int, nd)
	for d := range ext {
		ext[d] = width + 1 + d // unequal extents, each at least the width
	}
	full := make([]int, nd)
	cells := 1
	for d := range full {
		full[d] = ext[d] + 2*width
		cells *= full[d]
	}
	me := cart.MyCoords()
	rank := cart.Comm().Rank()
	global := make([]int, nd) // the global grid's extents
	for d := range global {
		global[d] = ext[d] * g.Dims[d]
	}
	// sentinel is what halo cell i, component k, of this rank starts
	// with: negative, so below every interior value, and its own.
	sentinel := func(i, k int) float64 { return -float64((rank*cells+i)*comps + k + 1) }
	// value returns the expected value of full-array cell i (index idx),
	// component k, at round r: the owner's interior value, or past an
	// open border the cell's own sentinel.
	value := func(i int, idx []int, k, r int) float64 {
		lin := 0
		for d := range idx {
			x := me[d]*ext[d] + idx[d] - width
			if x < 0 || x >= global[d] {
				if !g.Periods[d] {
					return sentinel(i, k)
				}
				x = (x + global[d]) % global[d]
			}
			lin = lin*global[d] + x
		}
		return float64((r*1_000_003+lin)*comps + k + 1)
	}
	data := make([]float64, cells*comps)
	idx := make([]int, nd)
	each := func(fn func(i int, interior bool)) {
		for i := range cells {
			rest, interior := i, true
			for d := nd - 1; d >= 0; d-- {
				idx[d] = rest % full[d]
				rest /= full[d]
				if idx[d] < width || idx[d] >= width+ext[d] {
					interior = false
				}
			}
			fn(i, interior)
		}
	}
	h, err := commtune.NewHalo(cart, data, ext, width, comps, commtune.WithHaloImpl(impl))
	if err != nil {
		return err
	}
	for round := range 2 {
		each(func(i int, interior bool) {
			for k := range comps {
				switch {
				case interior:
					data[i*comps+k] = value(i, idx, k, round)
				case round == 0:
					data[i*comps+k] = sentinel(i, k) // later rounds keep what the last left
				}
			}
		})
		if err := h.Exchange(ctx); err != nil {
			return err
		}
		var bad error
		each(func(i int, interior bool) {
			for k := range comps {
				want := value(i, idx, k, round)
				if got := data[i*comps+k]; got != want && bad == nil {
					bad = fmt.Errorf("round %d, rank %d at %v: cell %v component %d holds %s, want %s",
						round, rank, me, idx, k, haloValue(got, full, comps), haloValue(want, full, comps))
				}
			}
		})
		if bad != nil {
			return bad
		}
	}
	return nil
}

// haloValue shows v, naming the rank, cell (its index in the full array
// of extents full) and component a sentinel belongs to.
func haloValue(v float64, full []int, comps int) string {
	cells := 1
	for _, f := range full {
		cells *= f
	}
	if v >= 0 || v != float64(int(v)) || int(-v) > 1<<40 {
		return fmt.Sprint(v)
	}
	n := int(-v) - 1
	cell := n / comps % cells
	idx := make([]int, len(full))
	for d := len(full) - 1; d >= 0; d-- {
		idx[d] = cell % full[d]
		cell /= full[d]
	}
	return fmt.Sprintf("%v (the sentinel of rank %d, cell %v, component %d)", v, n/comps/cells, idx, n%comps)
}
