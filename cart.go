package commtune

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/commtune/commtune/internal/halo"
)

// ProcNull is the rank of a missing neighbour: what Cart.Shift and
// Cart.Neighbors report beyond an open (non-periodic) border. Skip such
// neighbours: point-to-point calls refuse ProcNull as a rank outside the
// communicator. It differs from AnySource, so a receive from a missing
// neighbour fails instead of taking a message from anyone.
const ProcNull = -2

// DimsCreate chooses a balanced grid of n ranks, as MPI_Dims_create does.
// Entries of dims that are positive are kept as constraints; the zero
// ones are filled in place so that the product of all entries is n, with
// the filled entries as close to each other as possible (the least
// difference between the largest and the smallest, then the smallest
// largest, and so on) and in non-increasing order: n = 12 with dims
// [0, 0] gives [4, 3], n = 6 with [0, 3, 0] gives [2, 3, 1]. On error dims
// is left unchanged.
func DimsCreate(n int, dims []int) error {
	if n < 1 {
		return fmt.Errorf("commtune: DimsCreate needs at least one rank, got %d", n)
	}
	if len(dims) == 0 {
		return fmt.Errorf("commtune: DimsCreate needs at least one dimension")
	}
	fixed, free := 1, 0
	for i, d := range dims {
		switch {
		case d < 0:
			return fmt.Errorf("commtune: DimsCreate: dims[%d] = %d is negative", i, d)
		case d == 0:
			free++
		case fixed > n/d:
			// The product already exceeds n, so it cannot divide it; stopping
			// here also keeps it from overflowing.
			return fmt.Errorf("commtune: DimsCreate: the fixed entries of %v multiply to more than n = %d", dims, n)
		default:
			fixed *= d
		}
	}
	if n%fixed != 0 {
		return fmt.Errorf("commtune: DimsCreate: the fixed entries of %v multiply to %d, which does not divide n = %d", dims, fixed, n)
	}
	if free == 0 {
		if fixed != n {
			return fmt.Errorf("commtune: DimsCreate: every entry of %v is fixed and they multiply to %d, not n = %d", dims, fixed, n)
		}
		return nil
	}
	best := balancedFactors(n/fixed, free)
	for i := range dims {
		if dims[i] == 0 {
			dims[i], best = best[0], best[1:]
		}
	}
	return nil
}

// balancedFactors returns the k factors of m (non-increasing) whose
// largest and smallest differ least, the lexicographically smallest among
// equals. It searches all factorizations: spreading the prime factors
// greedily is not optimal (72 on two dimensions would give 12×6, not
// 9×8), and the grids in use are small enough for the search.
func balancedFactors(m, k int) []int {
	var divs []int
	for d := 1; d <= m/d; d++ {
		if m%d == 0 {
			divs = append(divs, d)
			if d != m/d {
				divs = append(divs, m/d)
			}
		}
	}
	slices.Sort(divs)

	best := make([]int, k)
	bestSpread := math.MaxInt
	t := make([]int, 0, k)
	// walk extends t, in increasing lexicographic order, so the first
	// tuple found with the least spread is the one to keep.
	var walk func(rest, left, hi int)
	walk = func(rest, left, hi int) {
		if left == 0 {
			if rest == 1 && t[0]-t[k-1] < bestSpread {
				bestSpread = t[0] - t[k-1]
				copy(best, t)
			}
			return
		}
		for _, d := range divs {
			if d > hi || d > rest {
				break
			}
			if rest%d != 0 || !powAtLeast(d, left, rest) {
				continue // the entries left, none above d, cannot make rest
			}
			if len(t) > 0 && t[0]-d >= bestSpread {
				continue // cannot beat the best: a larger d may
			}
			t = append(t, d)
			walk(rest/d, left-1, d)
			t = t[:len(t)-1]
		}
	}
	walk(m, k, m)
	return best
}

// powAtLeast reports whether d^e ≥ m, without overflow.
func powAtLeast(d, e, m int) bool {
	p := 1
	for range e {
		if p >= m {
			return true
		}
		if d > 1 && p > m/d {
			return true
		}
		p *= d
	}
	return p >= m
}

// Cart is a Cartesian topology over a communicator, as MPI_Cart_create
// makes: its ranks laid out on a grid in row-major order (the last
// dimension varies fastest), each dimension either open or periodic.
// It is read-only after creation and safe for concurrent use.
type Cart struct {
	comm    *Comm
	dims    []int
	periods []bool
	coords  []int // the calling rank's

	mu         sync.Mutex
	selections map[string]*halo.Selection // shared by the Halos of one shape (haloselect.go)
}

// Cart returns a Cartesian view of c with the given extent and periodicity
// per dimension. Unlike MPI, which leaves surplus ranks out, the product of
// dims must equal c.Size(). Every rank of c must call it with the same
// arguments and in the same order relative to c's other Cart, Neighborhood,
// Dup and Split calls: the topology keeps a Dup of c, so that its traffic
// never matches messages on c. It needs no communication, and on an
// argument error takes no Dup, so the ranks must agree on the arguments.
// dims and periods are copied.
func (c *Comm) Cart(dims []int, periods []bool) (*Cart, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if len(dims) == 0 {
		return nil, fmt.Errorf("commtune: Cart needs at least one dimension")
	}
	if len(dims) != len(periods) {
		return nil, fmt.Errorf("commtune: Cart: %d dims but %d periods", len(dims), len(periods))
	}
	size, prod := c.Size(), 1
	for i, d := range dims {
		if d < 1 {
			return nil, fmt.Errorf("commtune: Cart: dims[%d] = %d, want at least 1", i, d)
		}
		if prod > size/d {
			return nil, fmt.Errorf("commtune: Cart: dims %v hold more than the communicator's %d ranks; their product must equal its size", dims, size)
		}
		prod *= d
	}
	if prod != size {
		return nil, fmt.Errorf("commtune: Cart: dims %v hold %d ranks, but the communicator has %d; their product must equal its size", dims, prod, size)
	}
	dup, err := c.Dup()
	if err != nil {
		return nil, err
	}
	t := &Cart{comm: dup, dims: slices.Clone(dims), periods: slices.Clone(periods)}
	t.coords = t.coordsOf(dup.Rank())
	return t, nil
}

// Comm returns the communicator the topology's ranks and traffic belong
// to: a Dup of the one it was made from, with the same ranks.
func (t *Cart) Comm() *Comm { return t.comm }

// Dims returns the extent of each dimension.
func (t *Cart) Dims() []int { return slices.Clone(t.dims) }

// Periods returns whether each dimension wraps around.
func (t *Cart) Periods() []bool { return slices.Clone(t.periods) }

// MyCoords returns the calling rank's coordinates.
func (t *Cart) MyCoords() []int { return slices.Clone(t.coords) }

// Coords returns the coordinates of rank (MPI_Cart_coords).
func (t *Cart) Coords(rank int) ([]int, error) {
	if size := t.comm.Size(); rank < 0 || rank >= size {
		return nil, fmt.Errorf("commtune: Cart.Coords: rank %d outside communicator of size %d", rank, size)
	}
	return t.coordsOf(rank), nil
}

func (t *Cart) coordsOf(rank int) []int {
	coords := make([]int, len(t.dims))
	for i := len(t.dims) - 1; i >= 0; i-- {
		coords[i] = rank % t.dims[i]
		rank /= t.dims[i]
	}
	return coords
}

// Rank returns the rank at coords (MPI_Cart_rank). A coordinate on a
// periodic dimension may be any integer and wraps around; on an open
// dimension it must lie within the grid.
func (t *Cart) Rank(coords []int) (int, error) {
	if len(coords) != len(t.dims) {
		return 0, fmt.Errorf("commtune: Cart.Rank: %d coordinates for %d dimensions", len(coords), len(t.dims))
	}
	rank := 0
	for i, x := range coords {
		d := t.dims[i]
		if t.periods[i] {
			x = (x%d + d) % d
		} else if x < 0 || x >= d {
			return 0, fmt.Errorf("commtune: Cart.Rank: coordinate %d outside [0, %d) on open dimension %d", x, d, i)
		}
		rank = rank*d + x
	}
	return rank, nil
}

// Shift returns the ranks disp steps away from the calling rank along
// dimension dim (MPI_Cart_shift): dest at coordinate +disp, source at
// -disp, so that sending to dest and receiving from source moves data by
// disp. Beyond an open border the rank is ProcNull; a periodic dimension
// wraps around. disp 0 gives the calling rank for both.
func (t *Cart) Shift(dim, disp int) (source, dest int, err error) {
	if dim < 0 || dim >= len(t.dims) {
		return ProcNull, ProcNull, fmt.Errorf("commtune: Cart.Shift: dimension %d outside [0, %d)", dim, len(t.dims))
	}
	// Reduced first to within one extent, either way the same ranks, so
	// that negating it cannot overflow.
	if d := t.dims[dim]; t.periods[dim] {
		disp %= d
	} else {
		disp = max(-d, min(disp, d))
	}
	return t.step(dim, -disp), t.step(dim, disp), nil
}

// step returns the rank disp steps (|disp| ≤ the extent) from the calling
// rank along dim, or ProcNull past an open border.
func (t *Cart) step(dim, disp int) int {
	d, x := t.dims[dim], t.coords[dim]+disp
	if t.periods[dim] {
		x = (x%d + d) % d
	} else if x < 0 || x >= d {
		return ProcNull
	}
	// The calling rank's coordinates with one changed: its rank moves by
	// the change times the dimension's stride.
	stride := 1
	for _, e := range t.dims[dim+1:] {
		stride *= e
	}
	return t.comm.Rank() + (x-t.coords[dim])*stride
}

// Neighbors returns the calling rank's 2·ndims face neighbours in MPI's
// order: for each dimension d, the source then the dest of Shift(d, 1).
// At an open border the neighbour is ProcNull. On a periodic dimension of
// extent 1 or 2 both neighbours are the same rank (the calling one for
// extent 1), listed twice as MPI does.
func (t *Cart) Neighbors() []int {
	ns := make([]int, 0, 2*len(t.dims))
	for d := range t.dims {
		ns = append(ns, t.step(d, -1), t.step(d, 1))
	}
	return ns
}

// Neighborhood returns the face neighbours (Neighbors) as a Neighborhood,
// both sources and destinations, on the Cart's own communicator.
func (t *Cart) Neighborhood() *Neighborhood {
	ns := t.Neighbors()
	return &Neighborhood{comm: t.comm, sources: ns, dests: slices.Clone(ns), cart: true}
}

// Neighborhood is the calling rank's list of ranks it receives from and
// ranks it sends to, for exchanges with an irregular pattern (as
// MPI_Dist_graph_create_adjacent makes). Entries may repeat, and may be
// ProcNull for a neighbour that is absent.
type Neighborhood struct {
	comm    *Comm
	sources []int
	dests   []int
	cart    bool // a Cart's face neighbours: slot 2d is −d, 2d+1 is +d
}

// Neighborhood returns the calling rank's neighbourhood in c: the ranks it
// receives from and those it sends to, each a rank of c or ProcNull. Every
// rank of c must call it, in the same order relative to c's other
// Neighborhood, Cart, Dup and Split calls: the neighbourhood keeps a Dup of
// c, so that its traffic never matches messages on c. It needs no
// communication, so nothing checks that the ranks' lists agree (that rank
// a lists b as a destination when b lists a as a source). Either list may
// be empty, for a rank that only sends or only receives. sources and
// dests are copied.
func (c *Comm) Neighborhood(sources, dests []int) (*Neighborhood, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	size := c.Size()
	for _, l := range []struct {
		name  string
		ranks []int
	}{{"source", sources}, {"destination", dests}} {
		for i, r := range l.ranks {
			if r != ProcNull && (r < 0 || r >= size) {
				return nil, fmt.Errorf("commtune: Neighborhood: %s %d is rank %d, outside communicator of size %d and not ProcNull", l.name, i, r, size)
			}
		}
	}
	dup, err := c.Dup()
	if err != nil {
		return nil, err
	}
	return &Neighborhood{comm: dup, sources: slices.Clone(sources), dests: slices.Clone(dests)}, nil
}

// Comm returns the communicator the neighbourhood's ranks and traffic
// belong to.
func (n *Neighborhood) Comm() *Comm { return n.comm }

// Sources returns the ranks the calling rank receives from.
func (n *Neighborhood) Sources() []int { return slices.Clone(n.sources) }

// Dests returns the ranks the calling rank sends to.
func (n *Neighborhood) Dests() []int { return slices.Clone(n.dests) }
