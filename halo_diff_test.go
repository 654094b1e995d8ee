package commtune

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/halo"
)

// The differential check: every implementation, run on goroutine ranks,
// against internal/halo's in-memory exchange of the same arrays under the
// all-at-once plan, byte for byte over every rank's whole array. Every
// cell of every rank starts with a value of its own — a ghost cell's says
// which rank and cell it belongs to and can never be mistaken for an
// interior value — so a cell copied from anywhere it should not be shows,
// including a ghost cell past an open border that picked up another
// rank's ghost.

// Environment variables that repeat or widen the random draw.
const (
	envHaloDiffSeed  = "COMMTUNE_TEST_HALO_SEED"  // the seed of the draw; random when unset
	envHaloDiffDraws = "COMMTUNE_TEST_HALO_DRAWS" // how many grids to draw
)

// haloDiffRanks bounds the ranks of a drawn grid: goroutine ranks, all on
// the two shared processors.
const haloDiffRanks = 12

// haloDiff is one grid and array shape, with the arrays of every rank
// before and after each round of exchanges as the reference makes them.
type haloDiff struct {
	dims    []int
	periods []bool
	shape   halo.Shape
	elem    string // float64, int32 or uint8, matching shape.ElemSize

	before, after [][][]byte // [round][rank]: the arrays around each exchange
}

func (d *haloDiff) String() string {
	var b strings.Builder
	for i, n := range d.dims {
		if i > 0 {
			b.WriteByte('x')
		}
		b.WriteString(strconv.Itoa(n))
		if d.periods[i] {
			b.WriteByte('p')
		} else {
			b.WriteByte('o')
		}
	}
	fmt.Fprintf(&b, "/ext%s/w%d/c%d/%s", joinInts(d.shape.Extents), d.shape.Width, d.shape.Components, d.elem)
	return b.String()
}

func (d *haloDiff) ranks() int {
	n := 1
	for _, x := range d.dims {
		n *= x
	}
	return n
}

// code is the value of component comp of cell (rank, cell) in round: an
// interior value, or with ghost set the sentinel a ghost cell starts
// with. Every (round, rank, cell, component) has its own, and where the
// element is 4 bytes or more a ghost's has a bit no interior value has.
// One- and two-byte elements cannot hold that many distinct values, so
// there the value is a hash with the top bit telling ghost from
// interior: a misplaced cell still shows, with a small chance of
// collision per cell.
func (d *haloDiff) code(round, rank, cell, comp int, ghost bool) uint64 {
	s := d.shape
	n := uint64(((round*d.ranks()+rank)*s.Cells()+cell)*s.Components + comp + 1)
	bits := 8 * s.ElemSize
	if s.ElemSize >= 4 {
		if ghost {
			n |= 1 << (bits - 2)
		}
		return n
	}
	n = (n * 0x9E3779B97F4A7C15) >> (64 - bits + 1)
	if ghost {
		n |= 1 << (bits - 1)
	}
	return n
}

// put writes component comp of cell to a with value v.
func (d *haloDiff) put(a []byte, cell, comp int, v uint64) {
	es := d.shape.ElemSize
	off := (cell*d.shape.Components + comp) * es
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	copy(a[off:off+es], b[:es])
}

// cellIndex returns the full-array index of cell number i.
func (d *haloDiff) cellIndex(i int) []int {
	full := d.shape.Full()
	idx := make([]int, len(full))
	for k := len(full) - 1; k >= 0; k-- {
		idx[k] = i % full[k]
		i /= full[k]
	}
	return idx
}

func (d *haloDiff) interior(i int) bool {
	h := d.shape.Width
	for k, x := range d.cellIndex(i) {
		if x < h || x >= h+d.shape.Extents[k] {
			return false
		}
	}
	return true
}

// interiorRuns are the byte runs of the interior, which each round
// rewrites.
func (d *haloDiff) interiorRuns() ([]halo.Run, error) {
	n := len(d.shape.Extents)
	box := halo.Box{Start: make([]int, n), Count: make([]int, n)}
	for k, e := range d.shape.Extents {
		box.Start[k], box.Count[k] = d.shape.Width, e
	}
	return halo.Runs(d.shape, box)
}

// prepare fills the reference: round 0 starts from interior values and
// ghost sentinels, each later round from the previous result with new
// interior values, and each result is halo.Simulate's under PlanAll.
func (d *haloDiff) prepare(rounds int) error {
	s := d.shape
	runs, err := d.interiorRuns()
	if err != nil {
		return err
	}
	d.before, d.after = make([][][]byte, rounds), make([][][]byte, rounds)
	for round := range rounds {
		d.before[round] = make([][]byte, d.ranks())
		for r := range d.before[round] {
			fresh := make([]byte, s.Bytes())
			for i := range s.Cells() {
				ghost := !d.interior(i)
				for k := range s.Components {
					d.put(fresh, i, k, d.code(round, r, i, k, ghost))
				}
			}
			a := fresh
			if round > 0 {
				// The halo as the last round left it, the interior new.
				a = bytes.Clone(d.after[round-1][r])
				for _, run := range runs {
					copy(a[run.Off:run.Off+run.Len], fresh[run.Off:])
				}
			}
			d.before[round][r] = a
		}
		d.after[round] = make([][]byte, d.ranks())
		for r, a := range d.before[round] {
			d.after[round][r] = bytes.Clone(a)
		}
		err := halo.Simulate(d.dims, d.periods, s, d.after[round], func(_ int, nb halo.Neighbors) (halo.Plan, error) {
			return halo.PlanAll(s, nb)
		})
		if err != nil {
			return err
		}
		// The reference itself must leave the halo past an open border
		// as it was: each cell there with its own sentinel.
		cb := s.Components * s.ElemSize
		for r, a := range d.after[round] {
			for i := range s.Cells() {
				if d.pastOpen(r, i) && !bytes.Equal(a[i*cb:(i+1)*cb], d.before[0][r][i*cb:(i+1)*cb]) {
					return fmt.Errorf("round %d: the reference changed rank %d's cell %v past an open border", round, r, d.cellIndex(i))
				}
			}
		}
	}
	return nil
}

// pastOpen reports whether cell i of rank lies past an open border: in
// the halo slab of a side of the grid, along an open dimension.
func (d *haloDiff) pastOpen(rank, i int) bool {
	coords := make([]int, len(d.dims))
	for k := len(d.dims) - 1; k >= 0; k-- {
		coords[k] = rank % d.dims[k]
		rank /= d.dims[k]
	}
	h := d.shape.Width
	for k, x := range d.cellIndex(i) {
		if d.periods[k] {
			continue
		}
		if x < h && coords[k] == 0 || x >= h+d.shape.Extents[k] && coords[k] == d.dims[k]-1 {
			return true
		}
	}
	return false
}

// describe names the element v: which rank, cell, component and round
// wrote it, among the values of the rounds up to upTo.
func (d *haloDiff) describe(v []byte, upTo int) string {
	s := d.shape
	if s.ElemSize < 4 {
		return fmt.Sprintf("% x", v) // too narrow to name its writer
	}
	var b [8]byte
	for round := range upTo + 1 {
		for r := range d.ranks() {
			for i := range s.Cells() {
				for k := range s.Components {
					for _, ghost := range []bool{false, true} {
						if ghost && round > 0 {
							continue // sentinels are written once
						}
						binary.LittleEndian.PutUint64(b[:], d.code(round, r, i, k, ghost))
						if bytes.Equal(b[:s.ElemSize], v) {
							what := "interior value"
							if ghost {
								what = "ghost sentinel"
							}
							return fmt.Sprintf("%s of rank %d cell %v component %d, round %d", what, r, d.cellIndex(i), k, round)
						}
					}
				}
			}
		}
	}
	return fmt.Sprintf("% x, written by no one", v)
}

// compare reports the first element of rank's array that differs from the
// reference after round.
func (d *haloDiff) compare(impl string, round, rank int, coords []int, got []byte) error {
	want := d.after[round][rank]
	if bytes.Equal(got, want) {
		return nil
	}
	es, cb := d.shape.ElemSize, d.shape.ElemSize*d.shape.Components
	for off := 0; off < len(got); off += es {
		if g, w := got[off:off+es], want[off:off+es]; !bytes.Equal(g, w) {
			cell, comp := off/cb, off%cb/es
			return fmt.Errorf("%s, round %d, rank %d (coords %v), cell %v component %d: got %s, want %s",
				impl, round, rank, coords, d.cellIndex(cell), comp, d.describe(g, round), d.describe(w, round))
		}
	}
	return nil
}

// haloDiffRank runs each of impls (implementations or selection methods)
// on one rank through the rounds of d, each on a Halo of its own over one
// Cart, and compares the whole array with the reference after every
// exchange. Odd rounds use Start and Wait, even ones Exchange. It returns
// how many exchanges each implementation carried out.
func haloDiffRank[T Number](ctx context.Context, c *Comm, d *haloDiff, impls []string) (map[string]int, error) {
	cart, err := c.Cart(d.dims, d.periods)
	if err != nil {
		return nil, err
	}
	runs, err := d.interiorRuns()
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	me := c.Rank()
	// A wrong cell is noted and the rounds go on: every rank must take the
	// same steps, whatever it found. An exchange that fails ends the job.
	var wrong []error
	for _, impl := range impls {
		var first error
		data := make([]T, d.shape.Cells()*d.shape.Components)
		raw := Bytes(data)
		copy(raw, d.before[0][me])
		h, err := NewHalo(cart, data, d.shape.Extents, d.shape.Width, d.shape.Components, haloMethod(impl))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", impl, err)
		}
		for round := range d.after {
			if round > 0 {
				for _, run := range runs {
					copy(raw[run.Off:run.Off+run.Len], d.before[round][me][run.Off:])
				}
			}
			ran := h.Impl()
			if round%2 == 1 {
				if err = h.Start(ctx); err == nil {
					err = h.Wait(ctx)
				}
			} else {
				err = h.Exchange(ctx)
			}
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w", ran, round, err)
			}
			counts[ran]++
			if err := d.compare(ran, round, me, cart.MyCoords(), raw); err != nil && first == nil {
				first = err
			}
		}
		if first != nil {
			wrong = append(wrong, first)
		}
	}
	return counts, errors.Join(wrong...)
}

// haloMethod is the option that makes a Halo run name: an implementation,
// or a selection method.
func haloMethod(name string) HaloOption {
	if slices.Contains(HaloSelectors(), name) {
		return WithHaloSelect(name)
	}
	return WithHaloImpl(name)
}

// haloDiffOn runs haloDiffRank on c with d's element type.
func haloDiffOn(ctx context.Context, c *Comm, d *haloDiff, impls []string) (map[string]int, error) {
	switch d.elem {
	case "float64":
		return haloDiffRank[float64](ctx, c, d, impls)
	case "int32":
		return haloDiffRank[int32](ctx, c, d, impls)
	case "uint8":
		return haloDiffRank[uint8](ctx, c, d, impls)
	}
	return nil, fmt.Errorf("no element type %q", d.elem)
}

// runHaloDiff runs d on goroutine ranks with each of impls in turn.
func runHaloDiff(ctx context.Context, d *haloDiff, impls []string, opts ...Option) error {
	return Local(d.ranks(), func(c *Comm) error {
		_, err := haloDiffOn(ctx, c, d, impls)
		return err
	}, opts...)
}

// drawHaloDiff draws a grid of 1 to 3 dimensions and at most
// haloDiffRanks ranks, each dimension open or periodic, with widths 1–2,
// 1 or 3 components, interior extents from the width up to two more, and
// an element type.
func drawHaloDiff(rng *rand.Rand) *haloDiff {
	nd := 1 + rng.IntN(3)
	d := &haloDiff{dims: make([]int, nd), periods: make([]bool, nd)}
	for {
		for k := range d.dims {
			d.dims[k] = 1 + rng.IntN(haloDiffRanks>>(nd-1)) // 1–12, 1–6, 1–3
		}
		if nd == 3 && rng.IntN(2) == 0 {
			d.dims[rng.IntN(nd)] = 4 // 3-D grids of 4 along some dimension too
		}
		if d.ranks() <= haloDiffRanks {
			break
		}
	}
	for k := range d.periods {
		d.periods[k] = rng.IntN(2) == 1
	}
	w := 1 + rng.IntN(2)
	ext := make([]int, nd)
	for k := range ext {
		ext[k] = w + rng.IntN(3)
	}
	elems := []struct {
		name string
		size int
	}{{"float64", 8}, {"int32", 4}, {"uint8", 1}}
	e := elems[rng.IntN(len(elems))]
	d.elem = e.name
	d.shape = halo.Shape{Extents: ext, Width: w, Components: []int{1, 3}[rng.IntN(2)], ElemSize: e.size}
	return d
}

// envInt reads a non-negative integer test setting, or def when unset.
func envInt(t *testing.T, name string, def uint64) uint64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// TestHaloDifferential checks every implementation against the reference
// on randomly drawn grids. The seed is logged: COMMTUNE_TEST_HALO_SEED
// repeats a draw and COMMTUNE_TEST_HALO_DRAWS draws more grids.
func TestHaloDifferential(t *testing.T) {
	seed := envInt(t, envHaloDiffSeed, uint64(time.Now().UnixNano()))
	draws := envInt(t, envHaloDiffDraws, 24)
	if testing.Short() && os.Getenv(envHaloDiffDraws) == "" {
		draws = 6
	}
	t.Logf("seed %d, %d grids (%s=%d repeats them)", seed, draws, envHaloDiffSeed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x4A10))
	for i := range draws {
		d := drawHaloDiff(rng)
		if err := d.prepare(2); err != nil {
			t.Fatalf("%v: reference: %v", d, err)
		}
		t.Run(fmt.Sprintf("%d/%v", i, d), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := runHaloDiff(ctx, d, HaloImpls()); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		})
	}
}
