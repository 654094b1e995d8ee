package commtune

import (
	"context"
	"fmt"
)

// groupIn returns g's world ranks for a call on c, or why g cannot be
// used there: nil, or another rank's or job's.
func (c *Comm) groupIn(what string, g *Group) ([]int, error) {
	if g == nil {
		return nil, fmt.Errorf("commtune: %s: %w", what, errNilGroup)
	}
	if g.ep != nil && (g.ep != c.in.Endpoint() || g.self != c.in.WorldRank(c.in.Rank())) {
		return nil, fmt.Errorf("commtune: %s: the group belongs to world rank %d (or another job), not to the calling rank", what, g.self)
	}
	return g.world, nil
}

// Create returns the communicator of g's ranks, numbered as in g, as
// MPI_Comm_create does: the calling rank's if it is in g, else nil. g's
// ranks must be ranks of c. Every rank of c must call it, in the same
// order relative to c's other Create, Dup, Split, Cart and Neighborhood
// calls. Ranks may pass different groups when those are disjoint and each
// group's members all pass it (the same ranks in the same order); ranks in
// no group pass GroupEmpty or any group they are not in.
//
// The ranks exchange a digest of their groups, so the outcome never
// depends on luck: when one rank passes a bad group (nil, another rank's,
// or with ranks outside c) every rank fails, and a member whose group's
// members did not all pass it fails instead of getting a communicator
// that they would not share.
func (c *Comm) Create(ctx context.Context, g *Group) (*Comm, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	world, err := c.groupIn("Create", g)
	n, err := c.in.Create(ctx, world, err)
	return wrap(n), err
}

// CreateGroup returns the communicator of g's ranks, numbered as in g, as
// MPI_Comm_create_group does: only the members of g call it, each with
// the same g (the same ranks in the same order) and tag, from 0 to TagUB;
// the other ranks of c take no part and need not be waiting. It fails on
// a rank that is not in g. A member makes its CreateGroup calls of one
// set of ranks and tag in the same order as the other members; calls of
// other sets or tags do not count, so concurrent calls (from different
// goroutines, say) differ by tag.
//
// The members exchange a digest of g, which fails members that passed
// the same ranks in different orders. Members that passed groups of
// different ranks cannot meet: they wait until ctx ends.
func (c *Comm) CreateGroup(ctx context.Context, g *Group, tag int) (*Comm, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	world, err := c.groupIn("CreateGroup", g)
	if err != nil {
		return nil, err
	}
	n, err := c.in.CreateGroup(ctx, world, tag)
	return wrap(n), err
}
