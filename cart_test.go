package commtune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDimsCreate(t *testing.T) {
	for _, tc := range []struct {
		n          int
		dims, want []int
	}{
		{1, []int{0}, []int{1}},
		{1, []int{0, 0, 0}, []int{1, 1, 1}},
		{7, []int{0}, []int{7}},
		{7, []int{0, 0}, []int{7, 1}},
		{6, []int{0, 0}, []int{3, 2}},
		{12, []int{0, 0}, []int{4, 3}},
		{16, []int{0, 0}, []int{4, 4}},
		{8, []int{0, 0, 0}, []int{2, 2, 2}},
		{7, []int{0, 0, 0}, []int{7, 1, 1}},
		{24, []int{0, 0, 0}, []int{4, 3, 2}},
		{6, []int{0, 3, 0}, []int{2, 3, 1}},
		{12, []int{2, 0, 0}, []int{2, 3, 2}},
		{12, []int{0, 0, 4}, []int{3, 1, 4}},
		{12, []int{3, 4}, []int{3, 4}},
		{12, []int{1, 0}, []int{1, 12}},
		// Spreading prime factors greedily would give 12×6 and 18×10.
		{72, []int{0, 0}, []int{9, 8}},
		{180, []int{0, 0}, []int{15, 12}},
		// Ties on the spread: the smaller largest entry wins, then the
		// smaller next one.
		{360, []int{0, 0, 0}, []int{9, 8, 5}},
		{20, []int{0, 0, 0, 0}, []int{5, 2, 2, 1}},
		{1 << 20, []int{0, 0, 0}, []int{128, 128, 64}},
		{1000003, []int{0, 0}, []int{1000003, 1}}, // a prime
	} {
		t.Run(fmt.Sprint(tc.n, tc.dims), func(t *testing.T) {
			dims := slices.Clone(tc.dims)
			if err := DimsCreate(tc.n, dims); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(dims, tc.want) {
				t.Errorf("DimsCreate(%d, %v) = %v, want %v", tc.n, tc.dims, dims, tc.want)
			}
		})
	}
}

// bruteDims returns, among every ordered k-tuple of positive integers with
// product n, the least difference between largest and smallest entry, and
// the lexicographically smallest such tuple sorted non-increasing.
func bruteDims(n, k int) []int {
	var best []int
	spread := func(t []int) int { return slices.Max(t) - slices.Min(t) }
	t := make([]int, k)
	var rec func(i, rest int)
	rec = func(i, rest int) {
		if i == k {
			if rest != 1 {
				return
			}
			s := slices.Clone(t)
			slices.Sort(s)
			slices.Reverse(s)
			if best == nil || spread(s) < spread(best) || spread(s) == spread(best) && slices.Compare(s, best) < 0 {
				best = s
			}
			return
		}
		for d := 1; d <= rest; d++ {
			if rest%d == 0 {
				t[i] = d
				rec(i+1, rest/d)
			}
		}
	}
	rec(0, n)
	return best
}

// TestDimsCreateBruteForce compares DimsCreate with an exhaustive search,
// unconstrained and with one fixed entry.
func TestDimsCreateBruteForce(t *testing.T) {
	for k := 1; k <= 4; k++ {
		for n := 1; n <= 64; n++ {
			dims := make([]int, k)
			if err := DimsCreate(n, dims); err != nil {
				t.Fatalf("DimsCreate(%d, %d zeros): %v", n, k, err)
			}
			if want := bruteDims(n, k); !slices.Equal(dims, want) {
				t.Errorf("DimsCreate(%d, %d zeros) = %v, want %v", n, k, dims, want)
			}
			if k == 1 {
				continue
			}
			// Fix the middle entry to each divisor of n: the others are
			// the best split of what is left.
			for f := 1; f <= n; f++ {
				if n%f != 0 {
					continue
				}
				dims := make([]int, k)
				dims[k/2] = f
				if err := DimsCreate(n, dims); err != nil {
					t.Fatalf("DimsCreate(%d, %v): %v", n, dims, err)
				}
				want := slices.Insert(bruteDims(n/f, k-1), k/2, f)
				if !slices.Equal(dims, want) {
					t.Errorf("DimsCreate(%d) with dims[%d] = %d: %v, want %v", n, k/2, f, dims, want)
				}
			}
		}
	}
}

func TestDimsCreateErrors(t *testing.T) {
	for _, tc := range []struct {
		n    int
		dims []int
		want string
	}{
		{0, []int{0, 0}, "at least one rank"},
		{-3, []int{0}, "at least one rank"},
		{4, nil, "at least one dimension"},
		{4, []int{}, "at least one dimension"},
		{4, []int{0, -2}, "negative"},
		{7, []int{0, 3, 0}, "does not divide"},
		{12, []int{5, 0}, "does not divide"},
		{12, []int{24, 0}, "more than n"},
		{6, []int{math.MaxInt, math.MaxInt, 0}, "more than n"},
		{12, []int{2, 3}, "every entry"},
		{12, []int{4, 6}, "more than n"},
	} {
		t.Run(fmt.Sprint(tc.n, tc.dims), func(t *testing.T) {
			dims := slices.Clone(tc.dims)
			err := DimsCreate(tc.n, dims)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "commtune: ") {
				t.Fatalf("DimsCreate(%d, %v) = %v, want an error with %q", tc.n, tc.dims, err, tc.want)
			}
			if !slices.Equal(dims, tc.dims) {
				t.Errorf("dims changed to %v on error", dims)
			}
		})
	}
}

// cartLayouts are the grids the Cart tests run on.
var cartLayouts = [][]int{{1}, {2}, {2, 3}, {3, 2}, {1, 5}, {2, 2, 2}, {3, 1, 2}}

// allPeriods returns every combination of periods for k dimensions.
func allPeriods(k int) [][]bool {
	var out [][]bool
	for m := 0; m < 1<<k; m++ {
		p := make([]bool, k)
		for i := range p {
			p[i] = m&(1<<i) != 0
		}
		out = append(out, p)
	}
	return out
}

// gridCoords lists the coordinates of every rank in row-major order by
// counting like an odometer, last dimension fastest.
func gridCoords(dims []int) [][]int {
	var out [][]int
	c := make([]int, len(dims))
	for {
		out = append(out, slices.Clone(c))
		i := len(dims) - 1
		for i >= 0 {
			c[i]++
			if c[i] < dims[i] {
				break
			}
			c[i] = 0
			i--
		}
		if i < 0 {
			return out
		}
	}
}

func product(dims []int) int {
	p := 1
	for _, d := range dims {
		p *= d
	}
	return p
}

// forEachCart runs fn on every rank with a Cart for each layout and each
// combination of periods.
func forEachCart(t *testing.T, fn func(cart *Cart, grid [][]int) error) {
	t.Helper()
	for _, dims := range cartLayouts {
		t.Run(fmt.Sprint(dims), func(t *testing.T) {
			grid := gridCoords(dims)
			err := Local(product(dims), func(c *Comm) error {
				for _, periods := range allPeriods(len(dims)) {
					cart, err := c.Cart(dims, periods)
					if err != nil {
						return err
					}
					if err := fn(cart, grid); err != nil {
						return fmt.Errorf("periods %v: %w", periods, err)
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

func TestCartCoordsRank(t *testing.T) {
	forEachCart(t, func(cart *Cart, grid [][]int) error {
		dims, periods := cart.Dims(), cart.Periods()
		if me := cart.Comm().Rank(); !slices.Equal(cart.MyCoords(), grid[me]) {
			return fmt.Errorf("rank %d: MyCoords %v, want %v", me, cart.MyCoords(), grid[me])
		}
		for r, want := range grid {
			got, err := cart.Coords(r)
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("Coords(%d) = %v, want %v", r, got, want)
			}
			if got, err := cart.Rank(want); err != nil || got != r {
				return fmt.Errorf("Rank(%v) = %d, %v; want %d", want, got, err, r)
			}
			// Moved by whole turns: the same rank on a periodic dimension,
			// an error on an open one.
			for i := range dims {
				for _, turns := range []int{-2, -1, 1, 3} {
					moved := slices.Clone(want)
					moved[i] += turns * dims[i]
					got, err := cart.Rank(moved)
					if periods[i] && (err != nil || got != r) {
						return fmt.Errorf("Rank(%v) = %d, %v; want %d", moved, got, err, r)
					}
					if !periods[i] && err == nil {
						return fmt.Errorf("Rank(%v) on open dimension %d = %d, want an error", moved, i, got)
					}
				}
			}
		}
		return nil
	})
}

// shiftWant computes what Shift should return, independently of Cart:
// the coordinates moved by disp, wrapped or dropped, looked up in grid.
func shiftWant(grid [][]int, dims []int, periods []bool, me, dim, disp int) int {
	c := slices.Clone(grid[me])
	c[dim] += disp
	if periods[dim] {
		c[dim] = int(new(big.Int).Mod(big.NewInt(int64(c[dim])), big.NewInt(int64(dims[dim]))).Int64())
	} else if c[dim] < 0 || c[dim] >= dims[dim] {
		return ProcNull
	}
	return slices.IndexFunc(grid, func(g []int) bool { return slices.Equal(g, c) })
}

func TestCartShift(t *testing.T) {
	forEachCart(t, func(cart *Cart, grid [][]int) error {
		dims, periods, me := cart.Dims(), cart.Periods(), cart.Comm().Rank()
		for dim := range dims {
			for disp := -2; disp <= 2; disp++ {
				src, dst, err := cart.Shift(dim, disp)
				if err != nil {
					return err
				}
				wantSrc, wantDst := shiftWant(grid, dims, periods, me, dim, -disp), shiftWant(grid, dims, periods, me, dim, disp)
				if src != wantSrc || dst != wantDst {
					return fmt.Errorf("rank %d: Shift(%d, %d) = %d, %d; want %d, %d", me, dim, disp, src, dst, wantSrc, wantDst)
				}
				if disp == 0 && (src != me || dst != me) {
					return fmt.Errorf("rank %d: Shift(%d, 0) = %d, %d", me, dim, src, dst)
				}
			}
			// Displacements far beyond the grid must not overflow.
			for _, disp := range []int{math.MaxInt, math.MinInt, math.MaxInt - 1, math.MinInt + 1} {
				src, dst, err := cart.Shift(dim, disp)
				if err != nil {
					return err
				}
				want := func(disp *big.Int) int {
					if !periods[dim] {
						return ProcNull
					}
					d := big.NewInt(int64(dims[dim]))
					c := new(big.Int).Add(big.NewInt(int64(grid[me][dim])), disp)
					return shiftWant(grid, dims, periods, me, dim, int(c.Mod(c, d).Int64())-grid[me][dim])
				}
				b := big.NewInt(int64(disp))
				if wantSrc, wantDst := want(new(big.Int).Neg(b)), want(b); src != wantSrc || dst != wantDst {
					return fmt.Errorf("rank %d: Shift(%d, %d) = %d, %d; want %d, %d", me, dim, disp, src, dst, wantSrc, wantDst)
				}
			}
		}
		return nil
	})
}

func TestCartNeighbors(t *testing.T) {
	forEachCart(t, func(cart *Cart, grid [][]int) error {
		var want []int
		for dim := range cart.Dims() {
			src, dst, err := cart.Shift(dim, 1)
			if err != nil {
				return err
			}
			want = append(want, src, dst)
		}
		if got := cart.Neighbors(); !slices.Equal(got, want) {
			return fmt.Errorf("rank %d: Neighbors %v, want %v", cart.Comm().Rank(), got, want)
		}
		nb := cart.Neighborhood()
		if nb.Comm() != cart.Comm() {
			return errors.New("the Cart's Neighborhood has a communicator of its own")
		}
		if !slices.Equal(nb.Sources(), want) || !slices.Equal(nb.Dests(), want) {
			return fmt.Errorf("Neighborhood %v → %v, want %v both", nb.Sources(), nb.Dests(), want)
		}
		return nil
	})

	// Explicit cases, rank by rank.
	for _, tc := range []struct {
		dims    []int
		periods []bool
		want    [][]int // by rank
	}{
		{[]int{2, 3}, []bool{false, false}, [][]int{
			{ProcNull, 3, ProcNull, 1}, {ProcNull, 4, 0, 2}, {ProcNull, 5, 1, ProcNull},
			{0, ProcNull, ProcNull, 4}, {1, ProcNull, 3, 5}, {2, ProcNull, 4, ProcNull},
		}},
		{[]int{2, 3}, []bool{true, true}, [][]int{
			{3, 3, 2, 1}, {4, 4, 0, 2}, {5, 5, 1, 0},
			{0, 0, 5, 4}, {1, 1, 3, 5}, {2, 2, 4, 3},
		}},
		// Extent 1 periodic: the rank is its own neighbour, twice.
		{[]int{1, 2}, []bool{true, false}, [][]int{{0, 0, ProcNull, 1}, {1, 1, 0, ProcNull}}},
		{[]int{3}, []bool{false}, [][]int{{ProcNull, 1}, {0, 2}, {1, ProcNull}}},
	} {
		t.Run(fmt.Sprint(tc.dims, tc.periods), func(t *testing.T) {
			err := Local(product(tc.dims), func(c *Comm) error {
				cart, err := c.Cart(tc.dims, tc.periods)
				if err != nil {
					return err
				}
				if got, want := cart.Neighbors(), tc.want[c.Rank()]; !slices.Equal(got, want) {
					return fmt.Errorf("Neighbors %v, want %v", got, want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCartCopies checks that a Cart keeps copies of its arguments and
// hands out copies of its state.
func TestCartCopies(t *testing.T) {
	err := Local(6, func(c *Comm) error {
		dims, periods := []int{0, 0}, []bool{true, false}
		if err := DimsCreate(c.Size(), dims); err != nil {
			return err
		}
		cart, err := c.Cart(dims, periods)
		if err != nil {
			return err
		}
		dims[0], periods[0] = 6, false
		if got := cart.Dims(); !slices.Equal(got, []int{3, 2}) {
			return fmt.Errorf("Dims %v after the caller changed its slice", got)
		}
		cart.Dims()[0] = 1
		cart.Periods()[0] = false
		cart.MyCoords()[0] = 7
		if !slices.Equal(cart.Dims(), []int{3, 2}) || !slices.Equal(cart.Periods(), []bool{true, false}) {
			return fmt.Errorf("Dims %v, Periods %v after changing returned slices", cart.Dims(), cart.Periods())
		}
		if want := []int{c.Rank() / 2, c.Rank() % 2}; !slices.Equal(cart.MyCoords(), want) {
			return fmt.Errorf("MyCoords %v, want %v", cart.MyCoords(), want)
		}
		if cart.Comm() == c || cart.Comm().Size() != c.Size() || cart.Comm().Rank() != c.Rank() {
			return errors.New("the Cart's communicator is not a Dup of c")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCartErrors(t *testing.T) {
	err := Local(6, func(c *Comm) error {
		for _, tc := range []struct {
			dims    []int
			periods []bool
			want    string
		}{
			{nil, nil, "at least one dimension"},
			{[]int{}, []bool{}, "at least one dimension"},
			{[]int{2, 3}, []bool{false}, "2 dims but 1 periods"},
			{[]int{6}, []bool{false, true}, "1 dims but 2 periods"},
			{[]int{2, 2}, []bool{false, false}, "hold 4 ranks"},
			{[]int{3, 3}, []bool{false, false}, "hold more than"},
			{[]int{6, 0}, []bool{false, false}, "dims[1] = 0"},
			{[]int{-2, -3}, []bool{false, false}, "dims[0] = -2"},
			{[]int{math.MaxInt, math.MaxInt}, []bool{false, false}, "hold more than"},
		} {
			if _, err := c.Cart(tc.dims, tc.periods); err == nil || !strings.Contains(err.Error(), tc.want) {
				return fmt.Errorf("Cart(%v, %v) = %v, want an error with %q", tc.dims, tc.periods, err, tc.want)
			}
		}
		cart, err := c.Cart([]int{2, 3}, []bool{false, true})
		if err != nil {
			return err
		}
		for _, r := range []int{-1, 6, math.MaxInt} {
			if _, err := cart.Coords(r); err == nil {
				return fmt.Errorf("Coords(%d) succeeded", r)
			}
		}
		for _, coords := range [][]int{nil, {1}, {1, 1, 1}, {2, 0}, {-1, 0}, {math.MinInt, 0}} {
			if _, err := cart.Rank(coords); err == nil {
				return fmt.Errorf("Rank(%v) succeeded", coords)
			}
		}
		for _, dim := range []int{-1, 2, math.MaxInt} {
			if _, _, err := cart.Shift(dim, 1); err == nil {
				return fmt.Errorf("Shift(%d, 1) succeeded", dim)
			}
		}
		// A periodic dimension takes any coordinate.
		if r, err := cart.Rank([]int{1, math.MinInt}); err != nil || r != 3+((math.MinInt%3)+3)%3 {
			return fmt.Errorf("Rank([1, MinInt]) = %d, %v", r, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	var nilComm *Comm
	if _, err := nilComm.Cart([]int{1}, []bool{false}); err == nil {
		t.Error("Cart on a nil communicator succeeded")
	}
	if _, err := nilComm.Neighborhood(nil, nil); err == nil {
		t.Error("Neighborhood on a nil communicator succeeded")
	}
}

func TestNeighborhood(t *testing.T) {
	err := Local(4, func(c *Comm) error {
		for _, tc := range []struct {
			sources, dests []int
			want           string // "" for success
		}{
			{nil, nil, ""},
			{[]int{0, 1, 1, ProcNull}, []int{3, 3, 2}, ""},
			{[]int{ProcNull}, []int{ProcNull, ProcNull}, ""},
			{[]int{4}, nil, "source 0 is rank 4"},
			{[]int{0, -3}, nil, "source 1 is rank -3"},
			{nil, []int{0, 1, math.MaxInt}, "destination 2 is rank"},
			{nil, []int{math.MinInt}, "destination 0 is rank"},
		} {
			srcs, dsts := slices.Clone(tc.sources), slices.Clone(tc.dests)
			nb, err := c.Neighborhood(srcs, dsts)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					return fmt.Errorf("Neighborhood(%v, %v) = %v, want an error with %q", tc.sources, tc.dests, err, tc.want)
				}
				continue
			}
			if err != nil {
				return err
			}
			if len(srcs) > 0 {
				srcs[0] = 2 // the caller's slice is its own
			}
			if !slices.Equal(nb.Sources(), tc.sources) || !slices.Equal(nb.Dests(), tc.dests) {
				return fmt.Errorf("Neighborhood(%v, %v) holds %v, %v", tc.sources, tc.dests, nb.Sources(), nb.Dests())
			}
			if nb.Comm() == c || nb.Comm().Size() != c.Size() || nb.Comm().Rank() != c.Rank() {
				return errors.New("the Neighborhood's communicator is not a Dup of c")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCartCommIsolated checks that traffic on a Cart's or a
// Neighborhood's communicator and traffic on its parent, with the same
// source and tag, never match each other, either way round.
func TestCartCommIsolated(t *testing.T) {
	const tag, ackTag = 5, 6
	for _, kind := range []string{"cart", "neighborhood"} {
		t.Run(kind, func(t *testing.T) {
			err := Local(2, func(c *Comm) error {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var topo *Comm
				if kind == "cart" {
					cart, err := c.Cart([]int{2}, []bool{true})
					if err != nil {
						return err
					}
					topo = cart.Comm()
				} else {
					nb, err := c.Neighborhood([]int{1 - c.Rank()}, []int{1 - c.Rank()})
					if err != nil {
						return err
					}
					topo = nb.Comm()
				}
				for _, way := range []struct {
					name            string
					posted, carrier *Comm // the pending receive's, the first message's
				}{{"parent receive", c, topo}, {"topology receive", topo, c}} {
					if c.Rank() == 1 {
						if err := way.carrier.Send(ctx, []byte("wrong"), 0, tag); err != nil {
							return err
						}
						// The right message waits until rank 0 has seen
						// the wrong one leave its receive pending.
						if _, err := c.Recv(ctx, nil, 0, ackTag); err != nil {
							return err
						}
						if err := way.posted.Send(ctx, []byte("right"), 0, tag); err != nil {
							return err
						}
						continue
					}
					buf := make([]byte, 8)
					req, err := way.posted.Irecv(buf, 1, tag)
					if err != nil {
						return err
					}
					// Had the contexts collided, the receive posted first
					// would take this message and this Recv would time out.
					other := make([]byte, 8)
					st, err := way.carrier.Recv(ctx, other, 1, tag)
					if err != nil {
						return fmt.Errorf("%s: %w", way.name, err)
					}
					if got := string(other[:st.Count]); got != "wrong" {
						return fmt.Errorf("%s: the other communicator got %q", way.name, got)
					}
					if _, done, _ := req.Test(); done {
						return fmt.Errorf("%s: completed by a message on the other communicator: %q", way.name, buf)
					}
					if err := c.Send(ctx, nil, 1, ackTag); err != nil {
						return err
					}
					st, err = req.Wait(ctx)
					if err != nil {
						return fmt.Errorf("%s: %w", way.name, err)
					}
					if got := string(buf[:st.Count]); got != "right" || st.Source != 1 || st.Tag != tag {
						return fmt.Errorf("%s: got %q from %d tag %d", way.name, got, st.Source, st.Tag)
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
