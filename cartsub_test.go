package commtune

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// subReference returns MPI_Cart_sub's sub-grid of rank me on a grid with
// coordinates grid (row-major): the ranks whose coordinates equal me's in
// every dimension dropped, in increasing rank order, which is row-major
// order of the coordinates kept.
func subReference(grid [][]int, me int, remain []bool) []int {
	var out []int
	for q, cq := range grid {
		same := true
		for d, keep := range remain {
			if !keep && cq[d] != grid[me][d] {
				same = false
			}
		}
		if same {
			out = append(out, q)
		}
	}
	return out
}

// TestCartSub checks every sub-grid of several grids, open and periodic,
// against the reference: members, order, dims, periods, coordinates, and
// traffic that reaches the members alone.
func TestCartSub(t *testing.T) {
	for _, dims := range [][]int{{2, 3}, {2, 2, 2}, {4, 1}, {3, 1, 2}, {5}} {
		t.Run(fmt.Sprint(dims), func(t *testing.T) {
			grid := gridCoords(dims)
			err := Local(product(dims), func(c *Comm) error {
				ctx := t.Context()
				for _, periods := range allPeriods(len(dims)) {
					cart, err := c.Cart(dims, periods)
					if err != nil {
						return err
					}
					me := cart.Comm().Rank()
					for _, remain := range allPeriods(len(dims)) {
						s, err := cart.Sub(remain)
						if err != nil {
							return err
						}
						where := fmt.Sprintf("periods %v remain %v", periods, remain)
						var wantDims, wantCoords []int
						var wantPeriods []bool
						for d, keep := range remain {
							if keep {
								wantDims = append(wantDims, dims[d])
								wantPeriods = append(wantPeriods, periods[d])
								wantCoords = append(wantCoords, grid[me][d])
							}
						}
						if !slices.Equal(s.Dims(), wantDims) || !slices.Equal(s.Periods(), wantPeriods) || !slices.Equal(s.MyCoords(), wantCoords) {
							return fmt.Errorf("%s: dims %v periods %v coords %v, want %v %v %v",
								where, s.Dims(), s.Periods(), s.MyCoords(), wantDims, wantPeriods, wantCoords)
						}
						members := subReference(grid, me, remain)
						want := make([]int, len(members))
						for i, q := range members {
							want[i] = cart.Comm().WorldRank(q)
						}
						if err := checkMade(ctx, s.Comm(), want, c.Rank()); err != nil {
							return fmt.Errorf("%s: %w", where, err)
						}
						// Rank and Coords agree with the order.
						for r := range s.Comm().Size() {
							cr, err := s.Coords(r)
							if err != nil {
								return err
							}
							back, err := s.Rank(cr)
							if err != nil || back != r {
								return fmt.Errorf("%s: Rank(Coords(%d)) = %d, %v", where, r, back, err)
							}
						}
						if len(wantDims) == 0 {
							if n := s.Neighbors(); len(n) != 0 {
								return fmt.Errorf("%s: a grid of no dimensions has neighbours %v", where, n)
							}
							if _, _, err := s.Shift(0, 1); err == nil {
								return fmt.Errorf("%s: Shift on a grid of no dimensions succeeded", where)
							}
						}
						if err := s.Comm().Close(); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCartSubErrors(t *testing.T) {
	err := Local(2, func(c *Comm) error {
		cart, err := c.Cart([]int{2}, []bool{false})
		if err != nil {
			return err
		}
		var null *Cart
		for _, tc := range []struct {
			t      *Cart
			remain []bool
			want   string
		}{
			{cart, nil, "remain has 0 entries for a Cart of 1 dimensions"},
			{cart, []bool{true, true}, "remain has 2 entries"},
			{null, []bool{true}, "nil Cart"},
		} {
			if _, err := tc.t.Sub(tc.remain); err == nil || !strings.Contains(err.Error(), tc.want) {
				return fmt.Errorf("Sub(%v): %v, want an error containing %q", tc.remain, err, tc.want)
			}
		}
		// A grid of no dimensions takes no Halo.
		s, err := cart.Sub([]bool{false})
		if err != nil {
			return err
		}
		if _, err := NewHalo(s, []float64{}, nil, 1, 1); err == nil {
			return fmt.Errorf("NewHalo on a grid of no dimensions succeeded")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
