package commtune

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/job"
)

// testGroups returns groups of world ranks belonging to world rank self of
// one job (an endpoint that stands for it).
func testGroups(self int, worlds ...[]int) []*Group {
	ep := &job.Endpoint{}
	var gs []*Group
	for _, w := range worlds {
		gs = append(gs, newGroup(ep, self, slices.Clone(w)))
	}
	return gs
}

func TestGroupAlgebra(t *testing.T) {
	// The caller is world rank 7; a is {3, 7, 1, 5, 0}, b is {5, 2, 7, 9}.
	gs := testGroups(7, []int{3, 7, 1, 5, 0}, []int{5, 2, 7, 9}, nil)
	a, b, empty := gs[0], gs[1], gs[2]
	for _, tc := range []struct {
		name string
		op   func() (*Group, error)
		want []int // world ranks
	}{
		{"incl", func() (*Group, error) { return a.Incl([]int{4, 1, 2}) }, []int{0, 7, 1}},
		{"incl none", func() (*Group, error) { return a.Incl(nil) }, nil},
		{"incl all reversed", func() (*Group, error) { return a.Incl([]int{4, 3, 2, 1, 0}) }, []int{0, 5, 1, 7, 3}},
		{"excl", func() (*Group, error) { return a.Excl([]int{3, 0}) }, []int{7, 1, 0}},
		{"excl none", func() (*Group, error) { return a.Excl(nil) }, []int{3, 7, 1, 5, 0}},
		{"excl all", func() (*Group, error) { return a.Excl([]int{0, 1, 2, 3, 4}) }, nil},
		{"range incl", func() (*Group, error) { return a.RangeIncl([][3]int{{0, 4, 2}, {3, 1, -2}}) }, []int{3, 1, 0, 5, 7}},
		{"range incl stride past last", func() (*Group, error) { return a.RangeIncl([][3]int{{1, 4, 2}}) }, []int{7, 5}},
		{"range incl empty triplet", func() (*Group, error) { return a.RangeIncl([][3]int{{3, 1, 1}, {2, 2, 1}, {1, 3, -1}}) }, []int{1}},
		{"range incl one, stride down", func() (*Group, error) { return a.RangeIncl([][3]int{{4, 4, -1}}) }, []int{0}},
		{"range excl", func() (*Group, error) { return a.RangeExcl([][3]int{{0, 2, 1}}) }, []int{5, 0}},
		{"union", func() (*Group, error) { return a.Union(b) }, []int{3, 7, 1, 5, 0, 2, 9}},
		{"union other way", func() (*Group, error) { return b.Union(a) }, []int{5, 2, 7, 9, 3, 1, 0}},
		{"union empty", func() (*Group, error) { return empty.Union(b) }, []int{5, 2, 7, 9}},
		{"union GroupEmpty", func() (*Group, error) { return GroupEmpty.Union(a) }, []int{3, 7, 1, 5, 0}},
		{"intersection", func() (*Group, error) { return a.Intersection(b) }, []int{7, 5}},
		{"intersection other way", func() (*Group, error) { return b.Intersection(a) }, []int{5, 7}},
		{"difference", func() (*Group, error) { return a.Difference(b) }, []int{3, 1, 0}},
		{"difference other way", func() (*Group, error) { return b.Difference(a) }, []int{2, 9}},
		{"difference self", func() (*Group, error) { return a.Difference(a) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.op()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(g.world, tc.want) || g.Size() != len(tc.want) {
				t.Fatalf("got %v (size %d), want %v", g.world, g.Size(), tc.want)
			}
			if want := indexOr(tc.want, 7); g.Rank() != want {
				t.Errorf("Rank() = %d, want %d", g.Rank(), want)
			}
			if g.ep != a.ep {
				t.Errorf("result belongs to another rank")
			}
		})
	}
}

func TestGroupErrors(t *testing.T) {
	gs := testGroups(0, []int{0, 1, 2, 3})
	other := testGroups(0, []int{0, 1})[0] // same world rank, another job
	g := gs[0]
	var null *Group
	for _, tc := range []struct {
		name string
		op   func() error
		want string
	}{
		{"incl duplicate", func() error { _, err := g.Incl([]int{1, 2, 1}); return err }, "rank 1 listed twice"},
		{"incl out of range", func() error { _, err := g.Incl([]int{0, 4}); return err }, "ranks[1] = 4 outside the group of size 4"},
		{"incl negative", func() error { _, err := g.Incl([]int{-1}); return err }, "ranks[0] = -1 outside"},
		{"excl duplicate", func() error { _, err := g.Excl([]int{3, 3}); return err }, "rank 3 listed twice"},
		{"excl out of range", func() error { _, err := g.Excl([]int{9}); return err }, "ranks[0] = 9 outside"},
		{"range stride 0", func() error { _, err := g.RangeIncl([][3]int{{0, 3, 0}}); return err }, "stride 0"},
		{"range outside", func() error { _, err := g.RangeIncl([][3]int{{2, 4, 1}}); return err }, "reaches outside the group of size 4"},
		{"range last outside", func() error { _, err := g.RangeExcl([][3]int{{0, 9, 100}}); return err }, "reaches outside"},
		{"range overlap", func() error { _, err := g.RangeIncl([][3]int{{0, 1, 1}, {2, 1, -1}}); return err }, "Group.RangeIncl: rank 1 listed twice"},
		{"range many", func() error { _, err := g.RangeIncl(slices.Repeat([][3]int{{0, 3, 1}}, 1000)); return err }, "list more ranks"},
		{"nil incl", func() error { _, err := null.Incl(nil); return err }, "nil group"},
		{"nil excl", func() error { _, err := null.Excl(nil); return err }, "nil group"},
		{"nil range", func() error { _, err := null.RangeIncl(nil); return err }, "nil group"},
		{"nil union", func() error { _, err := g.Union(nil); return err }, "Group.Union: nil group"},
		{"nil intersection", func() error { _, err := null.Intersection(g); return err }, "nil group"},
		{"nil difference", func() error { _, err := g.Difference(null); return err }, "nil group"},
		{"nil translate", func() error { _, err := g.TranslateRanks([]int{0}, nil); return err }, "nil group"},
		{"other job", func() error { _, err := g.Union(other); return err }, "belong to different ranks"},
		{"translate out of range", func() error { _, err := g.TranslateRanks([]int{0, 4}, g); return err }, "ranks[1] = 4 outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "commtune: ") {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestGroupTranslateCompare(t *testing.T) {
	gs := testGroups(2, []int{4, 2, 6, 8}, []int{8, 6, 4, 2}, []int{6, 8, 1}, []int{4, 2, 6, 8}, nil)
	a, rev, c, same, empty := gs[0], gs[1], gs[2], gs[3], gs[4]
	for _, tc := range []struct {
		from, to *Group
		ranks    []int
		want     []int
	}{
		{a, rev, []int{0, 1, 2, 3}, []int{2, 3, 1, 0}},
		{a, c, []int{3, 0, ProcNull, 2}, []int{1, Undefined, ProcNull, 0}},
		{c, a, []int{0, 1, 2}, []int{2, 3, Undefined}},
		{a, empty, []int{1}, []int{Undefined}},
		{a, a, nil, []int{}},
	} {
		got, err := tc.from.TranslateRanks(tc.ranks, tc.to)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("TranslateRanks(%v, %v → %v) = %v, want %v", tc.ranks, tc.from.world, tc.to.world, got, tc.want)
		}
	}
	other := testGroups(2, []int{4, 2, 6, 8})[0]
	for _, tc := range []struct {
		a, b *Group
		want GroupRelation
	}{
		{a, same, Ident}, {a, a, Ident}, {a, rev, Similar}, {rev, a, Similar}, {a, c, Unequal},
		{empty, GroupEmpty, Ident}, {a, empty, Unequal}, {a, other, Unequal},
		{a, nil, Unequal}, {nil, GroupEmpty, Unequal}, {nil, nil, Ident},
	} {
		if got := tc.a.Compare(tc.b); got != tc.want {
			t.Errorf("Compare(%v, %v) = %v, want %v", tc.a.Size(), tc.b.Size(), got, tc.want)
		}
	}
	var null *Group
	if null.Size() != 0 || null.Rank() != Undefined || GroupEmpty.Size() != 0 || GroupEmpty.Rank() != Undefined {
		t.Errorf("nil or empty group: size %d rank %d, %d %d", null.Size(), null.Rank(), GroupEmpty.Size(), GroupEmpty.Rank())
	}
	if s := fmt.Sprint(Ident, Similar, Unequal, GroupRelation(9)); s != "Ident Similar Unequal GroupRelation(9)" {
		t.Errorf("names: %s", s)
	}
}

// TestCommGroup: a communicator's group lists its ranks in its order, the
// caller at its rank.
func TestCommGroup(t *testing.T) {
	err := Local(4, func(c *Comm) error {
		s, err := c.Split(t.Context(), 0, -c.Rank())
		if err != nil {
			return err
		}
		for _, x := range []*Comm{c, s} {
			g := x.Group()
			if g.Size() != x.Size() || g.Rank() != x.Rank() {
				return fmt.Errorf("group size %d rank %d, communicator %d %d", g.Size(), g.Rank(), x.Size(), x.Rank())
			}
			for r := range x.Size() {
				if g.world[r] != x.WorldRank(r) {
					return fmt.Errorf("group %v, communicator's rank %d is world rank %d", g.world, r, x.WorldRank(r))
				}
			}
		}
		if got := c.Group().Compare(s.Group()); got != Similar {
			return fmt.Errorf("world and reversed split compare %v", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
