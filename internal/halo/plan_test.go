package halo

import (
	"slices"
	"testing"
)

// fakeNeighbors gives the neighbour at offset o the rank 100 + its
// direction index, or ProcNull where open(o).
func fakeNeighbors(open func(o []int) bool) Neighbors {
	return func(o []int) int {
		if open != nil && open(o) {
			return ProcNull
		}
		i, err := DirectionIndex(o)
		if err != nil {
			return -7
		}
		return 100 + i
	}
}

func negate(o []int) []int {
	n := make([]int, len(o))
	for d, x := range o {
		n[d] = -x
	}
	return n
}

func TestPlanAll(t *testing.T) {
	s := Shape{Extents: []int{3, 4, 2}, Width: 1, Components: 2, ElemSize: 8}
	for _, tc := range []struct {
		name string
		open func(o []int) bool
		want int // transfers
	}{
		{"every neighbour", nil, 26},
		{"high border of dimension 0", func(o []int) bool { return o[0] == 1 }, 17},
		{"corner of the grid", func(o []int) bool { return o[0] == 1 || o[2] == -1 }, 11},
		{"alone", func([]int) bool { return true }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanAll(s, fakeNeighbors(tc.open))
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Phases) != 1 || len(p.Phases[0].Transfers) != tc.want {
				t.Fatalf("plan %+v, want one phase of %d transfers", p, tc.want)
			}
			last := -1
			for _, tr := range p.Phases[0].Transfers {
				o := Directions(3)[tr.SendTag]
				if tr.SendTag <= last {
					t.Errorf("tag %d after %d: not in Directions order", tr.SendTag, last)
				}
				last = tr.SendTag
				if tc.open != nil && tc.open(o) {
					t.Errorf("transfer towards %v past an open border", o)
				}
				if tr.Peer != 100+tr.SendTag {
					t.Errorf("towards %v: peer %d, want %d", o, tr.Peer, 100+tr.SendTag)
				}
				if want, _ := DirectionIndex(negate(o)); tr.RecvTag != want {
					t.Errorf("towards %v: receive tag %d, want %d", o, tr.RecvTag, want)
				}
				send, _ := SendBoxAll(s, o)
				recv, _ := RecvBoxAll(s, o)
				if !boxEqual(tr.Send, send) || !boxEqual(tr.Recv, recv) {
					t.Errorf("towards %v: boxes %v, %v, want %v, %v", o, tr.Send, tr.Recv, send, recv)
				}
			}
		})
	}
}

func TestPlanPhased(t *testing.T) {
	s := Shape{Extents: []int{3, 4, 2}, Width: 2, Components: 1, ElemSize: 8}
	for _, tc := range []struct {
		name string
		open func(o []int) bool
		want []int // transfers per phase
	}{
		{"every neighbour", nil, []int{2, 2, 2}},
		{"low border of dimension 1", func(o []int) bool { return o[1] == -1 }, []int{2, 1, 2}},
		{"alone", func([]int) bool { return true }, []int{0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanPhased(s, fakeNeighbors(tc.open))
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Phases) != len(tc.want) {
				t.Fatalf("%d phases, want %d", len(p.Phases), len(tc.want))
			}
			for d, ph := range p.Phases {
				if len(ph.Transfers) != tc.want[d] {
					t.Errorf("phase %d: %d transfers, want %d", d, len(ph.Transfers), tc.want[d])
				}
				for _, tr := range ph.Transfers {
					o := Directions(3)[tr.SendTag]
					sign := o[d]
					unit := make([]int, 3)
					unit[d] = sign
					if sign == 0 || !slices.Equal(o, unit) {
						t.Fatalf("phase %d: transfer towards %v", d, o)
					}
					if want, _ := DirectionIndex(negate(o)); tr.RecvTag != want || tr.Peer != 100+tr.SendTag {
						t.Errorf("phase %d towards %v: peer %d receive tag %d", d, o, tr.Peer, tr.RecvTag)
					}
					send, _ := SendBoxPhased(s, d, sign, fakeNeighbors(tc.open))
					recv, _ := RecvBoxPhased(s, d, sign, fakeNeighbors(tc.open))
					if !boxEqual(tr.Send, send) || !boxEqual(tr.Recv, recv) {
						t.Errorf("phase %d towards %v: boxes %v, %v, want %v, %v", d, o, tr.Send, tr.Recv, send, recv)
					}
				}
			}
		})
	}
}

// TestPlanSelf is a grid of one rank, periodic everywhere: the rank is its
// own neighbour in every direction, and each transfer keeps its own tags.
func TestPlanSelf(t *testing.T) {
	s := Shape{Extents: []int{2, 3}, Width: 1, Components: 1, ElemSize: 8}
	self := func([]int) int { return 0 }
	all, err := PlanAll(s, self)
	if err != nil {
		t.Fatal(err)
	}
	phased, err := PlanPhased(s, self)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Plan{all, phased} {
		tags := map[[2]int]bool{}
		for _, ph := range p.Phases {
			for _, tr := range ph.Transfers {
				if tr.Peer != 0 || tags[[2]int{tr.SendTag, tr.RecvTag}] {
					t.Fatalf("transfer %+v: peer or tags repeat", tr)
				}
				tags[[2]int{tr.SendTag, tr.RecvTag}] = true
			}
		}
	}
	if n := len(all.Phases[0].Transfers); n != 8 {
		t.Errorf("all-at-once plan has %d transfers, want 8", n)
	}
}

// TestPlanNeighborsArgument checks that a neighbour function that keeps
// and scribbles over its argument cannot change the plan.
func TestPlanNeighborsArgument(t *testing.T) {
	s := Shape{Extents: []int{2, 3}, Width: 1, Components: 1, ElemSize: 8}
	scribble := func(o []int) int {
		r := 100
		if i, err := DirectionIndex(o); err == nil {
			r += i
		}
		for d := range o {
			o[d] = 5
		}
		return r
	}
	for _, plan := range []func(Shape, Neighbors) (Plan, error){PlanAll, PlanPhased} {
		got, err1 := plan(s, scribble)
		want, err2 := plan(s, fakeNeighbors(nil))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !slices.EqualFunc(got.Phases, want.Phases, func(a, b Phase) bool {
			return slices.EqualFunc(a.Transfers, b.Transfers, func(x, y Transfer) bool {
				return x.Peer == y.Peer && x.SendTag == y.SendTag && x.RecvTag == y.RecvTag && boxEqual(x.Send, y.Send) && boxEqual(x.Recv, y.Recv)
			})
		}) {
			t.Errorf("plan %+v, want %+v", got, want)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	s := Shape{Extents: []int{2, 3}, Width: 1, Components: 1, ElemSize: 8}
	for _, tc := range []struct {
		name  string
		shape Shape
		nb    Neighbors
		err   string
	}{
		{"invalid shape", Shape{Extents: []int{2, 3}, Width: 1, ElemSize: 8}, fakeNeighbors(nil), "0 components"},
		{"no neighbour function", s, nil, "no neighbour function"},
		{"negative rank", s, func([]int) int { return -2 }, "is rank -2, want ≥ 0 or ProcNull"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, plan := range []func(Shape, Neighbors) (Plan, error){PlanAll, PlanPhased} {
				p, err := plan(tc.shape, tc.nb)
				wantErr(t, err, tc.err)
				if p.Phases != nil {
					t.Errorf("plan %+v with the error", p)
				}
			}
		})
	}
}
