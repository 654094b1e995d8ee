package commtune

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/halo"
	"github.com/commtune/commtune/internal/testenv"
)

// haloElem is the element types the tests exchange: those the unique
// integers of haloRef convert to exactly.
type haloElem interface {
	~int32 | ~int64 | ~uint16 | ~float32 | ~float64
}

// haloCase is one exchange to check against the global reference.
type haloCase struct {
	dims         []int
	periods      []bool
	extents      []int
	width, comps int
	elem         string // float64, int32, float32, int64 or uint16
	impl         string
}

func (tc haloCase) String() string {
	p := ""
	for _, b := range tc.periods {
		p += map[bool]string{true: "p", false: "o"}[b]
	}
	return fmt.Sprintf("%s/%s/%s/w%dc%d%s", strings.Trim(strings.ReplaceAll(fmt.Sprint(tc.dims), " ", "x"), "[]"), p, tc.impl, tc.width, tc.comps, tc.elem)
}

func (tc haloCase) ranks() int {
	n := 1
	for _, d := range tc.dims {
		n *= d
	}
	return n
}

// haloRef is the global array of a case seen from one rank: every
// (global cell, component) has a value of its own, different in every
// round, and the halo past an open border holds haloSentinel.
type haloRef struct {
	coords, ext, global, full []int
	periods                   []bool
	width, comps, cells, span int
}

const haloSentinel = -1

func newHaloRef(coords []int, tc haloCase) *haloRef {
	r := &haloRef{coords: coords, ext: tc.extents, periods: tc.periods, width: tc.width, comps: tc.comps, cells: 1, span: 1}
	for d, e := range tc.extents {
		r.global = append(r.global, tc.dims[d]*e)
		r.full = append(r.full, e+2*tc.width)
		r.cells *= e + 2*tc.width
		r.span *= tc.dims[d] * e
	}
	r.span = r.span*tc.comps + 1
	return r
}

// cell returns the global cell that local cell i of the full array shows
// (wrapped across periodic borders), whether i is interior, and whether
// it shows any (false past an open border).
func (r *haloRef) cell(i int) (lin int, interior, ok bool) {
	idx := make([]int, len(r.full))
	for d := len(r.full) - 1; d >= 0; d-- {
		idx[d] = i % r.full[d]
		i /= r.full[d]
	}
	interior, ok = true, true
	for d, x := range idx {
		if x < r.width || x >= r.width+r.ext[d] {
			interior = false
		}
		g, n := r.coords[d]*r.ext[d]+x-r.width, r.global[d]
		if g < 0 || g >= n {
			if !r.periods[d] {
				ok = false
				continue
			}
			g = (g%n + n) % n
		}
		lin = lin*n + g
	}
	return lin, interior, ok
}

func (r *haloRef) value(lin, comp, round int) int { return round*r.span + lin*r.comps + comp + 1 }

// fill writes round's values into the interior, and the sentinel into the
// halo if halo is set.
func fillHalo[T haloElem](r *haloRef, data []T, round int, halo bool) {
	sentinel := haloSentinel
	for i := range r.cells {
		lin, interior, _ := r.cell(i)
		for c := range r.comps {
			switch {
			case interior:
				data[i*r.comps+c] = T(r.value(lin, c, round))
			case halo:
				data[i*r.comps+c] = T(sentinel)
			}
		}
	}
}

// expectHalo returns the array after an exchange of round.
func expectHalo[T haloElem](r *haloRef, round int) []T {
	want := make([]T, r.cells*r.comps)
	sentinel := haloSentinel
	for i := range r.cells {
		lin, _, ok := r.cell(i)
		for c := range r.comps {
			if ok {
				want[i*r.comps+c] = T(r.value(lin, c, round))
			} else {
				want[i*r.comps+c] = T(sentinel)
			}
		}
	}
	return want
}

// haloRank runs rounds exchanges of tc on one rank and checks the whole
// array, byte for byte, after each; the interior changes between rounds
// while the halo keeps what the last round left. Odd rounds use Start and
// Wait.
func haloRank[T haloElem](ctx context.Context, c *Comm, tc haloCase, rounds int) error {
	cart, err := c.Cart(tc.dims, tc.periods)
	if err != nil {
		return err
	}
	r := newHaloRef(cart.MyCoords(), tc)
	data := make([]T, r.cells*r.comps)
	fillHalo(r, data, 0, true)
	opt := WithHaloImpl(tc.impl)
	if tc.impl == HaloSelectBrute || tc.impl == HaloSelectHypothesis {
		opt = WithHaloSelect(tc.impl)
	}
	h, err := NewHalo(cart, data, tc.extents, tc.width, tc.comps, opt)
	if err != nil {
		return err
	}
	if h.Selection().Method == "fixed" && h.Impl() != tc.impl {
		return fmt.Errorf("Impl() = %q, want %q", h.Impl(), tc.impl)
	}
	for round := range rounds {
		if round > 0 {
			fillHalo(r, data, round, false)
		}
		if round%2 == 1 {
			if err := h.Start(ctx); err != nil {
				return err
			}
			err = h.Wait(ctx)
		} else {
			err = h.Exchange(ctx)
		}
		if err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		want := expectHalo[T](r, round)
		if bytes.Equal(Bytes(data), Bytes(want)) {
			continue
		}
		for i := range data {
			if data[i] != want[i] {
				return fmt.Errorf("round %d, coords %v: cell %d component %d holds %v, want %v",
					round, r.coords, i/r.comps, i%r.comps, data[i], want[i])
			}
		}
	}
	return nil
}

// runHalo runs tc on goroutine ranks.
func runHalo(ctx context.Context, tc haloCase, rounds int, opts ...Option) error {
	var fn func(*Comm) error
	switch tc.elem {
	case "float64":
		fn = func(c *Comm) error { return haloRank[float64](ctx, c, tc, rounds) }
	case "int32":
		fn = func(c *Comm) error { return haloRank[int32](ctx, c, tc, rounds) }
	case "float32":
		fn = func(c *Comm) error { return haloRank[float32](ctx, c, tc, rounds) }
	case "int64":
		fn = func(c *Comm) error { return haloRank[int64](ctx, c, tc, rounds) }
	case "uint16":
		fn = func(c *Comm) error { return haloRank[uint16](ctx, c, tc, rounds) }
	default:
		return fmt.Errorf("no element type %q", tc.elem)
	}
	return Local(tc.ranks(), fn, opts...)
}

// haloGrids are the process grids every implementation is checked on,
// each all periodic, all open and, beyond one dimension, mixed.
var haloGrids = []struct {
	dims    []int
	periods [][]bool
}{
	{[]int{1}, [][]bool{{true}, {false}}},
	{[]int{2}, [][]bool{{true}, {false}}},
	{[]int{3}, [][]bool{{true}, {false}}},
	{[]int{5}, [][]bool{{true}, {false}}},
	{[]int{2, 2}, [][]bool{{true, true}, {false, false}, {true, false}}},
	{[]int{2, 3}, [][]bool{{true, true}, {false, false}, {false, true}}},
	{[]int{1, 5}, [][]bool{{true, true}, {false, false}, {true, false}}},
	{[]int{3, 1}, [][]bool{{true, true}, {false, false}, {true, false}}},
	{[]int{2, 2, 2}, [][]bool{{true, true, true}, {false, false, false}, {true, false, true}}},
	{[]int{2, 1, 3}, [][]bool{{true, true, true}, {false, false, false}, {false, true, true}}},
}

// haloExtents are the interior extents per number of dimensions: unequal,
// so that a transposed box shows, and at least 2 for width 2.
var haloExtents = map[int][]int{1: {4}, 2: {3, 4}, 3: {2, 3, 4}}

// TestHaloExchange checks every implementation on every grid and
// periodicity against the global reference, with every width, number of
// components and element type; under the race detector, whose ranks run
// 5 to 20 times slower, with 3 components of float64 only (the same
// messages, of other sizes).
func TestHaloExchange(t *testing.T) {
	for _, g := range haloGrids {
		for _, p := range g.periods {
			for _, impl := range HaloImpls() {
				for _, width := range []int{1, 2} {
					for _, comps := range testenv.Pick([]int{1, 3}, []int{3}) {
						for _, elem := range testenv.Pick([]string{"float64", "int32"}, []string{"float64"}) {
							tc := haloCase{dims: g.dims, periods: p, extents: haloExtents[len(g.dims)],
								width: width, comps: comps, elem: elem, impl: impl}
							t.Run(tc.String(), func(t *testing.T) {
								ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
								defer cancel()
								if err := runHalo(ctx, tc, 1); err != nil {
									t.Fatal(err)
								}
							})
						}
					}
				}
			}
		}
	}
}

// TestHaloRepeated exchanges ten times with new interior values each time
// and the halo left as the last exchange filled it.
func TestHaloRepeated(t *testing.T) {
	grids := []struct {
		dims    []int
		periods []bool
	}{
		{[]int{2}, []bool{true}},
		{[]int{2, 3}, []bool{true, false}},
		{[]int{2, 1, 3}, []bool{true, true, true}},
	}
	for _, g := range grids {
		for _, impl := range HaloImpls() {
			tc := haloCase{dims: g.dims, periods: g.periods, extents: haloExtents[len(g.dims)], width: 2, comps: 3, elem: "float64", impl: impl}
			t.Run(tc.String(), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if err := runHalo(ctx, tc, 10); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestHaloElemTypes checks element types beyond float64 and int32.
func TestHaloElemTypes(t *testing.T) {
	for i, elem := range []string{"float32", "int64", "uint16"} {
		impl := HaloImpls()[i*2%len(HaloImpls())]
		tc := haloCase{dims: []int{2, 3}, periods: []bool{true, false}, extents: haloExtents[2], width: 1, comps: 2, elem: elem, impl: impl}
		t.Run(tc.String(), func(t *testing.T) {
			if err := runHalo(context.Background(), tc, 2); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestHaloRendezvous exchanges faces larger than the rendezvous threshold,
// so that a blocking send waits for its receive, on grids where ADCL's
// parity order alone deadlocks (a periodic dimension of odd extent) and
// where both neighbours are one rank (periodic, extent 2). A deadlock
// ends at the context's deadline.
func TestHaloRendezvous(t *testing.T) {
	const threshold = core.DefaultRendezvousThreshold
	opt := func(c *Config) { c.RendezvousThreshold = threshold }
	// Faces of one row of big cells (1-D) or one row of many cells (2-D),
	// each just over the threshold.
	big := threshold/8 + 64
	for _, g := range []struct {
		dims, extents []int
		periods       []bool
		comps         int
	}{
		{[]int{3}, []int{2}, []bool{true}, big},
		{[]int{5}, []int{2}, []bool{true}, big},
		{[]int{2}, []int{2}, []bool{true}, big},
		{[]int{3, 1}, []int{2, big}, []bool{true, true}, 1},
		{[]int{3, 2}, []int{2, big}, []bool{true, true}, 1},
	} {
		for _, impl := range HaloImpls() {
			tc := haloCase{dims: g.dims, periods: g.periods, extents: g.extents, width: 1, comps: g.comps, elem: "float64", impl: impl}
			t.Run(tc.String(), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				err := Local(tc.ranks(), func(c *Comm) error {
					before := c.Stats().RendezvousSends
					if err := haloRank[float64](ctx, c, tc, 2); err != nil {
						return err
					}
					// One-sided data always waits for its post: only the
					// two-sided sends need the faces' size to block.
					if c.Stats().RendezvousSends == before && !strings.HasPrefix(impl, "Put") && !strings.HasPrefix(impl, "Get") {
						return errors.New("no send used rendezvous: the faces are too small to test blocking")
					}
					return nil
				}, opt)
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestHaloImpls(t *testing.T) {
	var want []string
	for _, data := range []string{"pack", "ddt"} {
		want = append(want, "IsendIrecv_aao_"+data, "SendIrecv_aao_"+data, "IsendIrecv_pair_"+data,
			"SendIrecv_pair_"+data, "SendRecv_pair_"+data, "Sendrecv_pair_"+data)
	}
	for _, data := range []string{"pack", "ddt"} {
		want = append(want, "Put_aao_"+data, "Put_pair_"+data, "Get_aao_"+data, "Get_pair_"+data)
	}
	if got := HaloImpls(); !slices.Equal(got, want) {
		t.Fatalf("HaloImpls() = %v, want %v", got, want)
	}
	if want[0] != DefaultHaloImpl {
		t.Fatalf("the default %q is not registered first", DefaultHaloImpl)
	}
	for _, e := range halo.Registry().Entries() {
		a := e.AttrMap()
		if name := a[halo.AttrPrimitive] + "_" + a[halo.AttrPartners] + "_" + a[halo.AttrData]; name != e.Name {
			t.Errorf("entry %q has attributes naming it %q", e.Name, name)
		}
	}
}

// TestHaloErrors checks the arguments NewHalo refuses and the misuse of
// Start and Wait.
func TestHaloErrors(t *testing.T) {
	err := Local(2, func(c *Comm) error {
		cart, err := c.Cart([]int{2}, []bool{true})
		if err != nil {
			return err
		}
		ok := make([]float64, 6) // extent 4, width 1
		for _, tc := range []struct {
			name    string
			make    func() (*Halo, error)
			wantErr string
		}{
			{"nil cart", func() (*Halo, error) { return NewHalo(nil, ok, []int{4}, 1, 1) }, "nil Cart"},
			{"short data", func() (*Halo, error) { return NewHalo(cart, ok[:5], []int{4}, 1, 1) }, "data has 5 elements, want 6"},
			{"long data", func() (*Halo, error) { return NewHalo(cart, make([]float64, 12), []int{4}, 1, 1) }, "data has 12 elements, want 6"},
			{"data for components", func() (*Halo, error) { return NewHalo(cart, ok, []int{4}, 1, 2) }, "want 12"},
			{"extents length", func() (*Halo, error) { return NewHalo(cart, ok, []int{4, 1}, 1, 1) }, "2 extents for a Cart of 1 dimensions"},
			{"width over extent", func() (*Halo, error) { return NewHalo(cart, make([]float64, 8), []int{2}, 3, 1) }, "width 3 exceeds extent 2"},
			{"zero width", func() (*Halo, error) { return NewHalo(cart, make([]float64, 4), []int{4}, 0, 1) }, "width 0"},
			{"zero components", func() (*Halo, error) { return NewHalo(cart, ok, []int{4}, 1, 0) }, "0 components"},
			{"unknown impl", func() (*Halo, error) { return NewHalo(cart, ok, []int{4}, 1, 1, WithHaloImpl("Isend_aao")) },
				`unknown implementation "Isend_aao"; want one of ` + strings.Join(HaloImpls(), ", ")},
		} {
			h, err := tc.make()
			if err == nil || h != nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "commtune: ") {
				return fmt.Errorf("%s: NewHalo = %v, %v; want an error containing %q", tc.name, h, err, tc.wantErr)
			}
		}

		h, err := NewHalo(cart, ok, []int{4}, 1, 1)
		if err != nil {
			return err
		}
		if h.Impl() != DefaultHaloImpl {
			return fmt.Errorf("default Impl() = %q, want %q", h.Impl(), DefaultHaloImpl)
		}
		ctx := context.Background()
		if err := h.Wait(ctx); err == nil || !strings.Contains(err.Error(), "no exchange started") {
			return fmt.Errorf("Wait without Start: %v", err)
		}
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		if err := h.Start(canceled); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("Start with an ended context: %v, want context.Canceled", err)
		}
		if err := h.Start(ctx); err != nil {
			return fmt.Errorf("Start after a refused one: %v", err)
		}
		if err := h.Start(ctx); err == nil || !strings.Contains(err.Error(), "already started") {
			return fmt.Errorf("Start twice: %v", err)
		}
		if err := h.Wait(ctx); err != nil {
			return err
		}
		if err := h.Wait(ctx); err == nil {
			return errors.New("a second Wait succeeded")
		}
		var nilHalo *Halo
		if nilHalo.Impl() != "" || nilHalo.Start(ctx) == nil || nilHalo.Wait(ctx) == nil || nilHalo.Exchange(ctx) == nil {
			return errors.New("a nil Halo did not fail")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestHaloMismatchedShapes: ranks that disagree on the components get an
// error, not a corrupt halo, and the Halo stays unusable after it.
func TestHaloMismatchedShapes(t *testing.T) {
	err := Local(2, func(c *Comm) error {
		cart, err := c.Cart([]int{2}, []bool{false})
		if err != nil {
			return err
		}
		comps := 1 + c.Rank()
		h, err := NewHalo(cart, make([]int32, 6*comps), []int{4}, 1, comps)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = h.Exchange(ctx)
		switch {
		case err == nil:
			return errors.New("an exchange between mismatched shapes succeeded")
		case c.Rank() == 0 && !errors.Is(err, ErrTruncate):
			return fmt.Errorf("a message longer than its box: %v, want ErrTruncate", err)
		case c.Rank() == 1 && !strings.Contains(err.Error(), "rank 0 sent 4 bytes for a 8-byte box"):
			return fmt.Errorf("a message shorter than its box: %v", err)
		}
		if err := h.Exchange(ctx); err == nil || !strings.Contains(err.Error(), "unusable") {
			return fmt.Errorf("Exchange after a failed one: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
