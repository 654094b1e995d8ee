package halo

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

// Before an exchange every halo cell holds a sentinel of its own, naming
// its rank, cell and component and different from every interior value:
// a sentinel shared by all ranks, or by all cells, could not tell a cell
// left alone from one that received a copy of another ghost cell.

// refCase is a process grid and the local shape of its ranks.
type refCase struct {
	dims    []int
	periods []bool
	shape   Shape
}

func (c refCase) String() string {
	var b strings.Builder
	for d, n := range c.dims {
		if d > 0 {
			b.WriteByte('x')
		}
		fmt.Fprint(&b, n)
		if c.periods[d] {
			b.WriteByte('p')
		}
	}
	fmt.Fprintf(&b, "/ext%v/w%d/c%d/e%d", c.shape.Extents, c.shape.Width, c.shape.Components, c.shape.ElemSize)
	return b.String()
}

// global describes the array the grid's ranks share: dims[d]·Extents[d]
// interior cells per dimension, each component a distinct value.
type global struct {
	refCase
	ext    []int // global interior extents
	values int   // interior values, 1 … values; sentinels follow them
	ranks  int
}

func newGlobal(c refCase) (global, error) {
	g := global{refCase: c, ext: make([]int, len(c.dims)), ranks: 1}
	cells := 1
	for d, n := range c.dims {
		g.ext[d] = n * c.shape.Extents[d]
		cells *= g.ext[d]
		g.ranks *= n
	}
	g.values = cells * c.shape.Components
	// Interior values and sentinels must all fit in ElemSize bytes, or
	// the check could not tell them apart.
	top := uint64(g.values + g.ranks*c.shape.Cells()*c.shape.Components)
	if c.shape.ElemSize < 8 && top >= 1<<(8*c.shape.ElemSize) {
		return g, fmt.Errorf("%v: %d values and sentinels do not fit in %d bytes", c, top, c.shape.ElemSize)
	}
	return g, nil
}

// sentinel writes the bytes of component comp of the sentinel of local
// cell idx of rank: above every interior value, and different for every
// rank, cell and component.
func (g global) sentinel(dst []byte, rank int, idx []int, comp int) {
	cell := offsetOf(g.shape, idx) / (g.shape.Components * g.shape.ElemSize)
	g.put(dst, g.values+1+(rank*g.shape.Cells()+cell)*g.shape.Components+comp)
}

func (g global) put(dst []byte, v int) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	copy(dst, b[:g.shape.ElemSize])
}

// value writes the bytes of component comp of the global interior cell gi.
func (g global) value(dst []byte, gi []int, comp int) {
	lin := 0
	for d, i := range gi {
		lin = lin*g.ext[d] + i
	}
	g.put(dst, lin*g.shape.Components+comp+1)
}

func (g global) coords(rank int) []int {
	c := make([]int, len(g.dims))
	for d := len(g.dims) - 1; d >= 0; d-- {
		c[d] = rank % g.dims[d]
		rank /= g.dims[d]
	}
	return c
}

// want fills cell with what local cell idx of rank, at coord, must hold
// after an exchange: the global value at its global index, wrapped along
// periodic dimensions, or the rank's own sentinel for that cell if the
// index is past an open border in any dimension.
func (g global) want(cell []byte, rank int, coord, idx []int) {
	gi := make([]int, len(idx))
	es := g.shape.ElemSize
	for d, i := range idx {
		x := coord[d]*g.shape.Extents[d] + i - g.shape.Width
		if x < 0 || x >= g.ext[d] {
			if !g.periods[d] {
				for comp := range g.shape.Components {
					g.sentinel(cell[comp*es:(comp+1)*es], rank, idx, comp)
				}
				return
			}
			x = (x%g.ext[d] + g.ext[d]) % g.ext[d]
		}
		gi[d] = x
	}
	for comp := range g.shape.Components {
		g.value(cell[comp*es:(comp+1)*es], gi, comp)
	}
}

// arrays returns the ranks' arrays before an exchange: the interior cut
// from the global array, every halo cell its sentinel.
func (g global) arrays() [][]byte {
	s := g.shape
	cb := s.Components * s.ElemSize
	es := s.ElemSize
	out := make([][]byte, g.ranks)
	zero := make([]int, len(s.Extents))
	for r := range out {
		a := make([]byte, s.Bytes())
		coord := g.coords(r)
		eachIndex(zero, s.Full(), func(idx []int) {
			off := offsetOf(s, idx)
			if interior(s, idx) {
				g.want(a[off:off+cb], r, coord, idx)
				return
			}
			for comp := range s.Components {
				g.sentinel(a[off+comp*es:off+(comp+1)*es], r, idx, comp)
			}
		})
		out[r] = a
	}
	return out
}

// check compares every cell of every rank with what it must hold.
func (g global) check(arrays [][]byte) error {
	s := g.shape
	cb := s.Components * s.ElemSize
	want := make([]byte, cb)
	zero := make([]int, len(s.Extents))
	for r, a := range arrays {
		coord := g.coords(r)
		var err error
		eachIndex(zero, s.Full(), func(idx []int) {
			if err != nil {
				return
			}
			g.want(want, r, coord, idx)
			off := offsetOf(s, idx)
			if got := a[off : off+cb]; !bytes.Equal(got, want) {
				err = fmt.Errorf("rank %d (coords %v) cell %v: got % x, want % x", r, coord, idx, got, want)
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// exchange runs plan on every rank of c and checks the result against the
// global array; it returns the arrays afterwards.
func exchange(c refCase, plan func(s Shape, nb Neighbors) (Plan, error)) ([][]byte, error) {
	g, err := newGlobal(c)
	if err != nil {
		return nil, err
	}
	arrays := g.arrays()
	err = Simulate(c.dims, c.periods, c.shape, arrays, func(_ int, nb Neighbors) (Plan, error) {
		return plan(c.shape, nb)
	})
	if err != nil {
		return nil, err
	}
	return arrays, g.check(arrays)
}

// refCases is the exchange matrix: 1-, 2- and 3-dimensional grids with
// every combination of periodic and open dimensions, unequal local
// extents (down to the halo width), two widths and two cell sizes.
func refCases() []refCase {
	grids := [][]int{
		{1}, {2}, {3}, {5},
		{1, 1}, {2, 2}, {2, 3}, {3, 2}, {1, 5}, {4, 2},
		{1, 1, 1}, {2, 2, 2}, {2, 1, 3}, {1, 2, 2},
	}
	extents := map[int][][]int{
		1: {{5}, {2}},
		2: {{3, 4}, {4, 2}},
		3: {{3, 4, 5}, {2, 3, 2}},
	}
	var cases []refCase
	for _, dims := range grids {
		n := len(dims)
		for mask := range 1 << n {
			periods := make([]bool, n)
			for d := range periods {
				periods[d] = mask>>d&1 == 1
			}
			for _, ext := range extents[n] {
				for _, w := range []int{1, 2} {
					for _, comps := range []int{1, 3} {
						cases = append(cases, refCase{dims, periods, Shape{Extents: ext, Width: w, Components: comps, ElemSize: 8}})
					}
				}
			}
		}
	}
	// Narrow elements, where a slip by a few bytes shows.
	cases = append(cases,
		refCase{[]int{2, 3}, []bool{true, false}, Shape{Extents: []int{3, 2}, Width: 2, Components: 3, ElemSize: 4}},
		refCase{[]int{3}, []bool{true}, Shape{Extents: []int{4}, Width: 2, Components: 3, ElemSize: 1}},
		refCase{[]int{2, 2}, []bool{true, false}, Shape{Extents: []int{2, 3}, Width: 1, Components: 2, ElemSize: 1}},
	)
	return cases
}

func planAll(s Shape, nb Neighbors) (Plan, error)    { return PlanAll(s, nb) }
func planPhased(s Shape, nb Neighbors) (Plan, error) { return PlanPhased(s, nb) }

// TestExchangeReference checks every cell of every rank after both
// exchanges against the global array, and that both agree byte for byte.
func TestExchangeReference(t *testing.T) {
	cases := refCases()
	for _, c := range cases {
		all, err := exchange(c, planAll)
		if err != nil {
			t.Errorf("%v: all-at-once: %v", c, err)
			continue
		}
		phased, err := exchange(c, planPhased)
		if err != nil {
			t.Errorf("%v: dimension-ordered: %v", c, err)
			continue
		}
		for r := range all {
			if !bytes.Equal(all[r], phased[r]) {
				t.Errorf("%v: rank %d: the two exchanges differ", c, r)
			}
		}
	}
	if len(cases) < 500 {
		t.Errorf("only %d cases", len(cases))
	}
}

// TestExchangeReferenceFails checks that the reference check catches plans
// that are wrong in the ways plans go wrong.
func TestExchangeReferenceFails(t *testing.T) {
	mapTransfers := func(base func(Shape, Neighbors) (Plan, error), f func(s Shape, ph int, t Transfer) (Transfer, bool)) func(Shape, Neighbors) (Plan, error) {
		return func(s Shape, nb Neighbors) (Plan, error) {
			p, err := base(s, nb)
			if err != nil {
				return p, err
			}
			for i, ph := range p.Phases {
				var ts []Transfer
				for _, tr := range ph.Transfers {
					if tr, ok := f(s, i, tr); ok {
						ts = append(ts, tr)
					}
				}
				p.Phases[i].Transfers = ts
			}
			return p, nil
		}
	}
	dir := func(n, tag int) []int { return Directions(n)[tag] }
	cases := []refCase{
		{[]int{3, 2}, []bool{true, true}, Shape{Extents: []int{3, 4}, Width: 1, Components: 1, ElemSize: 8}},
		{[]int{2, 2, 2}, []bool{true, false, true}, Shape{Extents: []int{3, 4, 2}, Width: 2, Components: 3, ElemSize: 8}},
		{[]int{2, 2}, []bool{false, false}, Shape{Extents: []int{2, 3}, Width: 1, Components: 1, ElemSize: 8}},
	}
	// openFirst are the cases with an open dimension before one with
	// neighbours, where an earlier halo past the open border could travel.
	openFirst := cases[1:]
	broken := []struct {
		name string
		plan func(Shape, Neighbors) (Plan, error)
		on   []refCase // the cases it must fail; nil for all
	}{
		{"faces only", mapTransfers(planAll, func(s Shape, _ int, tr Transfer) (Transfer, bool) {
			nonzero := 0
			for _, x := range dir(len(s.Extents), tr.SendTag) {
				if x != 0 {
					nonzero++
				}
			}
			return tr, nonzero == 1
		}), nil},
		{"halo received on the wrong side", mapTransfers(planAll, func(s Shape, _ int, tr Transfer) (Transfer, bool) {
			tr.Recv, _ = RecvBoxAll(s, dir(len(s.Extents), tr.RecvTag))
			return tr, true
		}), nil},
		{"tags not reversed", mapTransfers(planAll, func(_ Shape, _ int, tr Transfer) (Transfer, bool) {
			tr.RecvTag = tr.SendTag
			return tr, true
		}), nil},
		{"halo slab sent", mapTransfers(planAll, func(s Shape, _ int, tr Transfer) (Transfer, bool) {
			tr.Send, _ = RecvBoxAll(s, dir(len(s.Extents), tr.SendTag))
			return tr, true
		}), nil},
		{"phases without earlier halos", mapTransfers(planPhased, func(s Shape, ph int, tr Transfer) (Transfer, bool) {
			h := s.Width
			for d := range ph {
				tr.Send.Start[d], tr.Send.Count[d] = h, s.Extents[d]
				tr.Recv.Start[d], tr.Recv.Count[d] = h, s.Extents[d]
			}
			return tr, true
		}), nil},
		// The geometry that sent the whole of every earlier dimension,
		// its halo past an open border included: each neighbour's stale
		// ghosts landed in this rank's.
		{"phases sending halos past an open border", mapTransfers(planPhased, func(s Shape, ph int, tr Transfer) (Transfer, bool) {
			h := s.Width
			for d := range ph {
				tr.Send.Start[d], tr.Send.Count[d] = 0, s.Extents[d]+2*h
				tr.Recv.Start[d], tr.Recv.Count[d] = 0, s.Extents[d]+2*h
			}
			return tr, true
		}), openFirst},
		{"last phase dropped", func(s Shape, nb Neighbors) (Plan, error) {
			p, err := PlanPhased(s, nb)
			p.Phases = p.Phases[:len(p.Phases)-1]
			return p, err
		}, nil},
		{"phases reversed", func(s Shape, nb Neighbors) (Plan, error) {
			p, err := PlanPhased(s, nb)
			for i, j := 0, len(p.Phases)-1; i < j; i, j = i+1, j-1 {
				p.Phases[i], p.Phases[j] = p.Phases[j], p.Phases[i]
			}
			return p, err
		}, nil},
	}
	for _, b := range broken {
		on := b.on
		if on == nil {
			on = cases
		}
		for _, c := range on {
			_, err := exchange(c, b.plan)
			if err == nil {
				t.Errorf("%s: %v: passed", b.name, c)
			}
			t.Logf("%s: %v: %v", b.name, c, err)
		}
	}
}
