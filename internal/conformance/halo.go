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
// with open, periodic and mixed borders.
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
		for _, d := range shapes {
			for _, p := range []func(int) bool{
				func(int) bool { return false },
				func(int) bool { return true },
				func(i int) bool { return i%2 == 0 },
			} {
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

// HaloCheck exchanges, with every implementation, on every grid of
// HaloGrids(c.Size()) and with halo widths 1 and 2 and 1 and 3 components,
// an array whose every interior value is unique to its global cell,
// component and round, and checks every halo value against what the
// neighbour owning it holds, byte for byte: past an open border the halo
// must keep the sentinel it was given.
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
	global := make([]int, nd) // the global grid's extents
	for d := range global {
		global[d] = ext[d] * g.Dims[d]
	}
	// value returns the expected value of full-array cell idx, component
	// k, at round r, and whether it is a halo cell past an open border.
	value := func(idx []int, k, r int) (float64, bool) {
		lin := 0
		for d := range idx {
			x := me[d]*ext[d] + idx[d] - width
			if x < 0 || x >= global[d] {
				if !g.Periods[d] {
					return -1, true
				}
				x = (x + global[d]) % global[d]
			}
			lin = lin*global[d] + x
		}
		return float64((r*1_000_003+lin)*comps + k + 1), false
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
				v, open := value(idx, k, round)
				switch {
				case interior:
					data[i*comps+k] = v
				case round == 0 || open:
					data[i*comps+k] = -1 // a halo not yet exchanged, or one past an open border
				}
			}
		})
		if err := h.Exchange(ctx); err != nil {
			return err
		}
		var bad error
		each(func(i int, interior bool) {
			for k := range comps {
				want, _ := value(idx, k, round)
				if got := data[i*comps+k]; got != want && bad == nil {
					bad = fmt.Errorf("round %d, rank at %v: cell %v component %d holds %v, want %v", round, me, idx, k, got, want)
				}
			}
		})
		if bad != nil {
			return bad
		}
	}
	return nil
}
