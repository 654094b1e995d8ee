package halo

import (
	"errors"
	"testing"
)

func TestGridNeighbors(t *testing.T) {
	for _, tc := range []struct {
		dims    []int
		periods []bool
		rank    int
		o       []int
		want    int
	}{
		{[]int{3}, []bool{false}, 0, []int{-1}, ProcNull},
		{[]int{3}, []bool{false}, 0, []int{1}, 1},
		{[]int{3}, []bool{false}, 2, []int{1}, ProcNull},
		{[]int{3}, []bool{true}, 0, []int{-1}, 2},
		{[]int{3}, []bool{true}, 2, []int{1}, 0},
		{[]int{3}, []bool{true}, 0, []int{-4}, 2},
		{[]int{1}, []bool{true}, 0, []int{-1}, 0},
		{[]int{1}, []bool{true}, 0, []int{1}, 0},
		{[]int{2}, []bool{true}, 1, []int{1}, 0},
		{[]int{2, 3}, []bool{true, false}, 4, []int{1, 0}, 1},
		{[]int{2, 3}, []bool{true, false}, 4, []int{0, 1}, 5},
		{[]int{2, 3}, []bool{true, false}, 4, []int{1, 1}, 2},
		{[]int{2, 3}, []bool{true, false}, 4, []int{-1, -1}, 0},
		{[]int{2, 3}, []bool{true, false}, 5, []int{0, 1}, ProcNull},
		{[]int{2, 3}, []bool{true, false}, 5, []int{1, 1}, ProcNull},
		{[]int{2, 3}, []bool{false, true}, 5, []int{0, 1}, 3},
		{[]int{2, 3}, []bool{false, true}, 5, []int{1, 1}, ProcNull},
		{[]int{2, 2, 2}, []bool{true, true, true}, 0, []int{-1, -1, -1}, 7},
		{[]int{2, 1, 3}, []bool{false, true, false}, 3, []int{0, 1, 1}, 4},
		{[]int{2, 1, 3}, []bool{false, true, false}, 3, []int{-1, 0, 0}, 0},
		{[]int{2, 1, 3}, []bool{false, true, false}, 2, []int{-1, 0, 0}, ProcNull},
		{[]int{2, 3}, []bool{true, true}, 0, []int{1}, ProcNull},
		{[]int{2, 3}, []bool{true, true}, 0, nil, ProcNull},
	} {
		if got := gridNeighbors(tc.dims, tc.periods, tc.rank)(tc.o); got != tc.want {
			t.Errorf("grid %v periods %v rank %d offset %v: %d, want %d", tc.dims, tc.periods, tc.rank, tc.o, got, tc.want)
		}
	}
}

func TestSimulateErrors(t *testing.T) {
	s := Shape{Extents: []int{2, 3}, Width: 1, Components: 1, ElemSize: 8}
	dims, periods := []int{2, 3}, []bool{true, false}
	arrays := func(n, size int) [][]byte {
		a := make([][]byte, n)
		for i := range a {
			a[i] = make([]byte, size)
		}
		return a
	}
	// onRank0 is PlanAll with rank 0's plan altered by f.
	onRank0 := func(f func(p *Plan)) func(int, Neighbors) (Plan, error) {
		return func(rank int, nb Neighbors) (Plan, error) {
			p, err := PlanAll(s, nb)
			if err == nil && rank == 0 {
				f(&p)
			}
			return p, err
		}
	}
	// Rank 0's transfers in Directions order: (−1,0), (−1,1), (0,1),
	// (1,0), (1,1); dimension 0 wraps, so (−1,·) and (1,·) reach rank 3
	// and 4 both ways.
	first := func(p *Plan) *Transfer { return &p.Phases[0].Transfers[0] }
	errPlan := errors.New("no plan for you")
	for _, tc := range []struct {
		name    string
		dims    []int
		periods []bool
		shape   Shape
		arrays  [][]byte
		plan    func(int, Neighbors) (Plan, error)
		err     string
	}{
		{"valid", dims, periods, s, arrays(6, 160), onRank0(func(*Plan) {}), ""},
		{"invalid shape", dims, periods, Shape{Extents: []int{2, 3}}, arrays(6, 160), onRank0(func(*Plan) {}), "width 0"},
		{"dimensions disagree", []int{6}, []bool{true}, s, arrays(6, 160), onRank0(func(*Plan) {}), "grid of 1 dimensions with 1 periods for a 2-dimensional shape"},
		{"periods missing", dims, []bool{true}, s, arrays(6, 160), onRank0(func(*Plan) {}), "grid of 2 dimensions with 1 periods"},
		{"empty dimension", []int{2, 0}, periods, s, arrays(0, 160), onRank0(func(*Plan) {}), "0 ranks in dimension 1"},
		{"too few arrays", dims, periods, s, arrays(5, 160), onRank0(func(*Plan) {}), "more ranks than the 5 arrays"},
		{"too many arrays", dims, periods, s, arrays(7, 160), onRank0(func(*Plan) {}), "grid [2 3] has 6 ranks, but there are 7 arrays"},
		{"huge grid", []int{1 << 40, 1 << 40}, periods, s, arrays(6, 160), onRank0(func(*Plan) {}), "more ranks than the 6 arrays"},
		{"array too short", dims, periods, s, append(arrays(5, 160), make([]byte, 159)), onRank0(func(*Plan) {}), "array of rank 5 has 159 bytes, want 160"},
		{"no plan", dims, periods, s, arrays(6, 160), nil, "no plan function"},
		{"plan fails", dims, periods, s, arrays(6, 160), func(int, Neighbors) (Plan, error) { return Plan{}, errPlan }, "plan of rank 0: no plan for you"},
		{"plan of a bad shape", dims, periods, s, arrays(6, 160), func(_ int, nb Neighbors) (Plan, error) { return PlanAll(Shape{}, nb) }, "plan of rank 0: shape has no dimensions"},
		{"peer past the grid", dims, periods, s, arrays(6, 160), onRank0(func(p *Plan) { first(p).Peer = 6 }), "rank 0 sends to rank 6 of 6"},
		{"negative peer", dims, periods, s, arrays(6, 160), onRank0(func(p *Plan) { first(p).Peer = ProcNull }), "rank 0 sends to rank -1 of 6"},
		{"send box outside", dims, periods, s, arrays(6, 160), onRank0(func(p *Plan) { first(p).Send = Box{[]int{3, 0}, []int{2, 1}} }), "phase 0: rank 0, send box: box start 3 count 2 leaves dimension 0"},
		{"receive box outside", dims, periods, s, arrays(6, 160), onRank0(func(p *Plan) { first(p).Recv = Box{[]int{0, 4}, []int{1, 2}} }), "phase 0: rank 0, receive box: box start 4 count 2 leaves dimension 1"},
		{"receive box malformed", dims, periods, s, arrays(6, 160), onRank0(func(p *Plan) { first(p).Recv = Box{} }), "receive box: box has 0 starts"},
		{"size mismatch", dims, periods, s, arrays(6, 160), onRank0(func(p *Plan) { first(p).Recv = Box{[]int{0, 1}, []int{1, 2}} }), "rank 0 receives 24 bytes into a 16-byte box from rank 3 with tag 6"},
		{"receive boxes overlap", dims, periods, s, arrays(6, 160), onRank0(func(p *Plan) { p.Phases[0].Transfers[1].Recv = first(p).Recv }), "phase 0: rank 0: receive boxes {[0 1] [1 3]} and {[0 1] [1 3]} overlap"},
		{"receive into a send box", dims, periods, s, arrays(6, 160), onRank0(func(p *Plan) { first(p).Recv = p.Phases[0].Transfers[3].Send }), "phase 0: rank 0: receive box {[2 1] [1 3]} overlaps send box"},
		{"two messages under one tag", dims, periods, s, arrays(6, 160), onRank0(func(p *Plan) {
			tr := *first(p)
			tr.Recv, tr.Send = Box{[]int{0, 0}, []int{1, 1}}, Box{[]int{1, 1}, []int{1, 1}}
			p.Phases[0].Transfers = append(p.Phases[0].Transfers, tr)
		}), "rank 0 sends rank 3 two messages with tag 1"},
		{"receive twice", dims, periods, s, arrays(6, 160), onRank0(func(p *Plan) { p.Phases[0].Transfers[3].RecvTag = first(p).RecvTag }), "rank 0 receives the message from rank 3 with tag 6 twice"},
		{"message never sent", dims, periods, s, arrays(6, 160), onRank0(func(p *Plan) { first(p).SendTag = 7 }), "rank 3 waits for a message from rank 0 with tag 1 that is never sent"},
		{"extra phase", dims, periods, s, arrays(6, 160), onRank0(func(p *Plan) { p.Phases = append(p.Phases, p.Phases[0]) }), "phase 1: rank 0 waits for a message from rank 3 with tag 6 that is never sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Simulate(tc.dims, tc.periods, tc.shape, tc.arrays, tc.plan)
			wantErr(t, err, tc.err)
		})
	}
	err := Simulate(dims, periods, s, arrays(6, 160), func(int, Neighbors) (Plan, error) { return Plan{}, errPlan })
	if !errors.Is(err, errPlan) {
		t.Errorf("error %v does not wrap the plan's", err)
	}
}
