package commtune

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/halo"
)

// oneRankGrids are the grids of a communicator of one rank: in every
// dimension the rank is its own neighbour (periodic) or has none (open,
// ProcNull on that side), some blocks exactly the halo width.
var oneRankGrids = []struct {
	periods []bool
	ext     []int
	width   int
}{
	{[]bool{false}, []int{2}, 2},
	{[]bool{true}, []int{2}, 2},
	{[]bool{false, false}, []int{1, 3}, 1},
	{[]bool{true, true}, []int{3, 2}, 2},
	{[]bool{false, true}, []int{2, 3}, 2},
	{[]bool{false, false, false}, []int{2, 2, 2}, 2},
	{[]bool{true, true, true}, []int{1, 2, 3}, 1},
	{[]bool{true, false, true}, []int{2, 3, 2}, 2},
}

// oneRankJobs make a communicator of one rank: a job of one, or each rank
// of a job of three on its own after a Split. fn runs on it.
var oneRankJobs = []struct {
	name string
	run  func(fn func(*Comm) error, opts ...Option) error
}{
	{"Local(1)", func(fn func(*Comm) error, opts ...Option) error { return Local(1, fn, opts...) }},
	{"Split of Local(3)", func(fn func(*Comm) error, opts ...Option) error {
		return Local(3, func(c *Comm) error {
			alone, err := c.Split(context.Background(), c.Rank(), 0)
			if err != nil {
				return err
			}
			if alone.Size() != 1 {
				return fmt.Errorf("split gave %d ranks, want 1", alone.Size())
			}
			return fn(alone)
		}, opts...)
	}},
}

// TestHaloOneRank runs Halos on communicators of one rank, with each
// selection method and a fixed implementation of each geometry, through
// enough exchanges for a brute-force selection to run every
// implementation and decide, checking every cell after each: periodic
// halos wrap onto the rank itself and open ones keep their sentinels.
func TestHaloOneRank(t *testing.T) {
	const rounds = 2*20 + 4 // one sample each, then the winner a while
	methods := []string{HaloSelectLearn, HaloSelectBrute, HaloSelectHypothesis, DefaultHaloImpl, "SendRecv_pair_ddt"}
	for _, job := range oneRankJobs {
		for _, g := range oneRankGrids {
			d := &haloDiff{dims: make([]int, len(g.ext)), periods: g.periods, elem: "float64",
				shape: halo.Shape{Extents: g.ext, Width: g.width, Components: 2, ElemSize: 8}}
			for k := range d.dims {
				d.dims[k] = 1
			}
			if err := d.prepare(rounds); err != nil {
				t.Fatalf("%v: reference: %v", d, err)
			}
			for _, method := range methods {
				t.Run(fmt.Sprintf("%s/%v/%s", job.name, d, method), func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					err := job.run(func(c *Comm) error {
						ran, err := haloDiffOn(ctx, c, d, []string{method})
						if err != nil {
							return err
						}
						return checkOneRankRan(method, ran)
					}, haloSamples(1), haloState(HaloStateOff))
					if err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}

// checkOneRankRan checks that the exchanges ran what method says: a
// brute-force selection every implementation, a hypothesis selection
// more than one, a learning one its prior's (no probe within the rounds),
// a fixed implementation that one alone.
func checkOneRankRan(method string, ran map[string]int) error {
	var names []string
	for name := range ran {
		names = append(names, name)
	}
	switch method {
	case HaloSelectBrute:
		if len(ran) != len(HaloImpls()) {
			return fmt.Errorf("brute force ran %d implementations (%s), want all %d", len(ran), strings.Join(names, ", "), len(HaloImpls()))
		}
	case HaloSelectHypothesis:
		if len(ran) < 2 {
			return fmt.Errorf("hypotheses ran only %s", strings.Join(names, ", "))
		}
	case HaloSelectLearn:
		if len(ran) != len(halo.Prior()) {
			return fmt.Errorf("learning ran %d implementations (%s), want the prior's %d", len(ran), strings.Join(names, ", "), len(halo.Prior()))
		}
	default:
		if len(ran) != 1 || ran[method] == 0 {
			return fmt.Errorf("fixed %s ran %s", method, strings.Join(names, ", "))
		}
	}
	return nil
}

// TestHaloDegenerateGrids checks every implementation on grids of several
// ranks with one rank along some dimensions, blocks exactly the halo
// width, and open borders around ranks with no neighbour on any side.
func TestHaloDegenerateGrids(t *testing.T) {
	for _, tc := range []struct {
		dims    []int
		periods []bool
		ext     []int
		width   int
	}{
		{[]int{1, 3, 1}, []bool{false, true, false}, []int{2, 2, 2}, 2},
		{[]int{1, 3, 1}, []bool{true, false, true}, []int{1, 1, 1}, 1},
		{[]int{3, 1, 1}, []bool{false, false, true}, []int{2, 2, 2}, 2},
		{[]int{1, 1, 4}, []bool{false, false, false}, []int{1, 2, 1}, 1},
		{[]int{2, 1, 2}, []bool{false, true, false}, []int{2, 2, 2}, 2},
		{[]int{1, 2}, []bool{false, false}, []int{2, 2}, 2},
		{[]int{2, 1}, []bool{true, false}, []int{1, 1}, 1},
		{[]int{4}, []bool{false}, []int{2}, 2},
	} {
		d := &haloDiff{dims: tc.dims, periods: tc.periods, elem: "int32",
			shape: halo.Shape{Extents: tc.ext, Width: tc.width, Components: 3, ElemSize: 4}}
		if err := d.prepare(2); err != nil {
			t.Fatalf("%v: reference: %v", d, err)
		}
		t.Run(d.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := runHaloDiff(ctx, d, HaloImpls()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
