package commtune

import (
	"errors"
	"fmt"
	"slices"

	"github.com/commtune/commtune/internal/job"
)

// Group is an ordered set of ranks, as MPI_Group: a communicator's ranks
// (Comm.Group) and what set operations make of them, from which Create
// and CreateGroup make communicators. A rank's number in a group is its
// position there. A Group belongs to the rank that made it, which is how
// Rank knows the caller's position; it holds no communication resources
// and is immutable, so it is safe for concurrent use and needs no freeing.
//
// Calls that return an error refuse a nil Group; Size and Rank treat it as
// empty.
type Group struct {
	ep    *job.Endpoint // the rank the group belongs to; nil for GroupEmpty alone
	self  int           // that rank's world rank
	world []int         // world rank of each member, in group order
	rank  int           // the calling rank's position, or Undefined
}

// GroupEmpty is the group with no ranks (MPI_GROUP_EMPTY). A Create call
// takes it from ranks that are in no new communicator.
var GroupEmpty = &Group{self: Undefined, rank: Undefined}

// GroupRelation is how two groups compare (Group.Compare).
type GroupRelation int

// The results of Group.Compare, MPI's MPI_IDENT, MPI_SIMILAR and
// MPI_UNEQUAL.
const (
	Ident   GroupRelation = iota // the same ranks in the same order
	Similar                      // the same ranks in another order
	Unequal                      // different ranks
)

// String returns the relation's name.
func (r GroupRelation) String() string {
	switch r {
	case Ident:
		return "Ident"
	case Similar:
		return "Similar"
	case Unequal:
		return "Unequal"
	}
	return fmt.Sprintf("GroupRelation(%d)", int(r))
}

// Group returns the ranks of c, in c's order (MPI_Comm_group); nil for a
// nil communicator.
func (c *Comm) Group() *Group {
	if c == nil || c.in == nil {
		return nil
	}
	world := make([]int, c.Size())
	for r := range world {
		world[r] = c.in.WorldRank(r)
	}
	return newGroup(c.in.Endpoint(), c.in.WorldRank(c.in.Rank()), world)
}

// newGroup returns the group of world ranks (taken, not copied) belonging
// to the rank of ep whose world rank is self.
func newGroup(ep *job.Endpoint, self int, world []int) *Group {
	return &Group{ep: ep, self: self, world: world, rank: indexOr(world, self)}
}

// derive returns a group of g's owner.
func (g *Group) derive(world []int) *Group { return newGroup(g.ep, g.self, world) }

func indexOr(world []int, w int) int {
	if i := slices.Index(world, w); i >= 0 {
		return i
	}
	return Undefined
}

// Size returns the number of ranks in g; 0 for a nil group.
func (g *Group) Size() int {
	if g == nil {
		return 0
	}
	return len(g.world)
}

// Rank returns the calling rank's number in g, or Undefined when it is not
// a member (or g is nil).
func (g *Group) Rank() int {
	if g == nil {
		return Undefined
	}
	return g.rank
}

var errNilGroup = errors.New("nil group")

// checkRanks checks that ranks are numbers in g, none twice, and returns
// which of g's positions they name.
func (g *Group) checkRanks(what string, ranks []int) ([]bool, error) {
	if g == nil {
		return nil, fmt.Errorf("commtune: Group.%s: %w", what, errNilGroup)
	}
	named := make([]bool, len(g.world))
	for i, r := range ranks {
		if r < 0 || r >= len(g.world) {
			return nil, fmt.Errorf("commtune: Group.%s: ranks[%d] = %d outside the group of size %d", what, i, r, len(g.world))
		}
		if named[r] {
			return nil, fmt.Errorf("commtune: Group.%s: rank %d listed twice", what, r)
		}
		named[r] = true
	}
	return named, nil
}

// Incl returns the group of g's ranks listed in ranks, in that order
// (MPI_Group_incl): rank i of the new group is rank ranks[i] of g. Each
// must be a rank of g, listed once. No ranks give an empty group.
func (g *Group) Incl(ranks []int) (*Group, error) { return g.incl("Incl", ranks) }

func (g *Group) incl(what string, ranks []int) (*Group, error) {
	if _, err := g.checkRanks(what, ranks); err != nil {
		return nil, err
	}
	world := make([]int, len(ranks))
	for i, r := range ranks {
		world[i] = g.world[r]
	}
	return g.derive(world), nil
}

// Excl returns g without the ranks listed in ranks, the others in g's
// order (MPI_Group_excl). Each must be a rank of g, listed once.
func (g *Group) Excl(ranks []int) (*Group, error) { return g.excl("Excl", ranks) }

func (g *Group) excl(what string, ranks []int) (*Group, error) {
	named, err := g.checkRanks(what, ranks)
	if err != nil {
		return nil, err
	}
	world := make([]int, 0, len(g.world)-len(ranks))
	for r, w := range g.world {
		if !named[r] {
			world = append(world, w)
		}
	}
	return g.derive(world), nil
}

// RangeIncl is Incl of the ranks that ranges list (MPI_Group_range_incl):
// each range {first, last, stride} stands for first, first+stride, …, up
// to and including last when the stride reaches it. The stride may be
// negative, not zero; a range whose first is past its last in the
// stride's direction is empty, and the first and last of any other must
// be ranks of g.
func (g *Group) RangeIncl(ranges [][3]int) (*Group, error) {
	ranks, err := g.expand("RangeIncl", ranges)
	if err != nil {
		return nil, err
	}
	return g.incl("RangeIncl", ranks)
}

// RangeExcl is Excl of the ranks that ranges list (MPI_Group_range_excl),
// read as for RangeIncl.
func (g *Group) RangeExcl(ranges [][3]int) (*Group, error) {
	ranks, err := g.expand("RangeExcl", ranges)
	if err != nil {
		return nil, err
	}
	return g.excl("RangeExcl", ranks)
}

// expand lists the ranks of ranges, checking each range's ends so that a
// huge one fails before it is listed.
func (g *Group) expand(what string, ranges [][3]int) ([]int, error) {
	if g == nil {
		return nil, fmt.Errorf("commtune: Group.%s: %w", what, errNilGroup)
	}
	n := len(g.world)
	var ranks []int
	for i, rg := range ranges {
		first, last, stride := rg[0], rg[1], rg[2]
		if stride == 0 {
			return nil, fmt.Errorf("commtune: Group.%s: range %d %v has stride 0", what, i, rg)
		}
		if stride > 0 && first > last || stride < 0 && first < last {
			continue
		}
		if first < 0 || first >= n || last < 0 || last >= n {
			return nil, fmt.Errorf("commtune: Group.%s: range %d %v reaches outside the group of size %d", what, i, rg, n)
		}
		for r := first; (stride > 0 && r <= last) || (stride < 0 && r >= last); r += stride {
			ranks = append(ranks, r)
			if len(ranks) > n {
				return nil, fmt.Errorf("commtune: Group.%s: ranges %v list more ranks than the group's %d, so some twice", what, ranges, n)
			}
		}
	}
	return ranks, nil
}

// owner checks that a and b may be combined: neither nil, both of the
// same rank (GroupEmpty goes with any), and returns the one whose owner
// the result has.
func owner(what string, a, b *Group) (*Group, error) {
	if a == nil || b == nil {
		return nil, fmt.Errorf("commtune: Group.%s: %w", what, errNilGroup)
	}
	if a.ep == nil {
		return b, nil
	}
	if b.ep != nil && (a.ep != b.ep || a.self != b.self) {
		return nil, fmt.Errorf("commtune: Group.%s: the groups belong to different ranks (world ranks %d and %d, or different jobs)", what, a.self, b.self)
	}
	return a, nil
}

// members returns the set of g's world ranks.
func (g *Group) members() map[int]bool {
	m := make(map[int]bool, len(g.world))
	for _, w := range g.world {
		m[w] = true
	}
	return m
}

// Union returns g's ranks in g's order, then b's ranks not in g in b's
// order (MPI_Group_union).
func (g *Group) Union(b *Group) (*Group, error) {
	o, err := owner("Union", g, b)
	if err != nil {
		return nil, err
	}
	in := g.members()
	world := slices.Clone(g.world)
	for _, w := range b.world {
		if !in[w] {
			world = append(world, w)
		}
	}
	return o.derive(world), nil
}

// Intersection returns g's ranks that are also in b, in g's order
// (MPI_Group_intersection).
func (g *Group) Intersection(b *Group) (*Group, error) {
	return g.filter("Intersection", b, true)
}

// Difference returns g's ranks that are not in b, in g's order
// (MPI_Group_difference).
func (g *Group) Difference(b *Group) (*Group, error) {
	return g.filter("Difference", b, false)
}

func (g *Group) filter(what string, b *Group, keep bool) (*Group, error) {
	o, err := owner(what, g, b)
	if err != nil {
		return nil, err
	}
	in := b.members()
	var world []int
	for _, w := range g.world {
		if in[w] == keep {
			world = append(world, w)
		}
	}
	return o.derive(world), nil
}

// TranslateRanks returns the numbers in b of the ranks numbered ranks in
// g (MPI_Group_translate_ranks): Undefined for one not in b, and ProcNull
// for ProcNull.
func (g *Group) TranslateRanks(ranks []int, b *Group) ([]int, error) {
	if _, err := owner("TranslateRanks", g, b); err != nil {
		return nil, err
	}
	pos := make(map[int]int, len(b.world))
	for i, w := range b.world {
		pos[w] = i
	}
	out := make([]int, len(ranks))
	for i, r := range ranks {
		switch {
		case r == ProcNull:
			out[i] = ProcNull
		case r < 0 || r >= len(g.world):
			return nil, fmt.Errorf("commtune: Group.TranslateRanks: ranks[%d] = %d outside the group of size %d", i, r, len(g.world))
		default:
			if p, ok := pos[g.world[r]]; ok {
				out[i] = p
			} else {
				out[i] = Undefined
			}
		}
	}
	return out, nil
}

// Compare tells whether g and b hold the same ranks in the same order
// (Ident), the same ranks in another order (Similar) or not the same
// ranks (Unequal), as MPI_Group_compare. Groups of different ranks or
// jobs compare Unequal, as does a nil group with any but nil.
func (g *Group) Compare(b *Group) GroupRelation {
	if g == nil || b == nil {
		if g == b {
			return Ident
		}
		return Unequal
	}
	if _, err := owner("Compare", g, b); err != nil || len(g.world) != len(b.world) {
		return Unequal
	}
	if slices.Equal(g.world, b.world) {
		return Ident
	}
	in := g.members()
	for _, w := range b.world {
		if !in[w] {
			return Unequal
		}
	}
	return Similar
}
