package comm

import (
	"context"
	"fmt"
	"slices"
)

// Salts that keep the contexts of communicators made from groups apart
// from those of Dup and Split, and from each other's.
const (
	createSalt      = 0xC4EA7E
	createGroupSalt = 0xC4EA7E6
	deriveSalt      = 0xDE41BE
)

// hashRanks is an order-sensitive digest of a list of world ranks: two
// lists of the same ranks in different orders differ.
func hashRanks(ranks []int) uint64 {
	vals := make([]uint64, 0, len(ranks)+1)
	vals = append(vals, uint64(len(ranks)))
	for _, w := range ranks {
		vals = append(vals, uint64(w))
	}
	return mix(vals...)
}

// position returns the index of world rank w in ranks, or -1.
func position(ranks []int, w int) int { return slices.Index(ranks, w) }

// inComm returns an error naming the first of ranks (world ranks) that is
// not a member of c.
func (c *Comm) inComm(ranks []int, what string) error {
	for _, w := range ranks {
		if r := c.fromWorld(w); r < 0 || r >= len(c.group) || c.group[r] != w {
			return fmt.Errorf("commtune: %s: the group holds world rank %d, which is not in the communicator", what, w)
		}
	}
	return nil
}

// Create makes the communicator of group (world ranks, in the new
// communicator's order), as MPI_Comm_create: collective over c, every
// rank passing a group of c's ranks, members receiving the communicator
// and the others nil. Ranks may pass different groups, disjoint ones,
// provided each group's members all pass it. argErr is a rank's own
// argument error, found before the call: the rank still takes part, so
// that the others fail at once instead of waiting for it.
//
// One exchange of two numbers among c's ranks makes the outcome agree:
// every rank fails when one passed a bad group, and a member whose
// group's members did not all pass the same group (same ranks, same
// order) fails rather than get a communicator they would not share.
func (c *Comm) Create(ctx context.Context, group []int, argErr error) (*Comm, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	seq := c.nextDerived()
	if argErr == nil {
		argErr = c.inComm(group, "Create")
	}
	h := hashRanks(group)
	bad := 0
	if argErr != nil {
		bad = 1
	}
	all, err := c.allgatherInts(ctx, []int{bad, int(h)})
	if err != nil {
		return nil, fmt.Errorf("commtune: Create: %w", err)
	}
	if argErr != nil {
		return nil, argErr
	}
	for r, v := range all {
		if v[0] != 0 {
			return nil, fmt.Errorf("commtune: Create: rank %d passed a bad group (its own call says why)", r)
		}
	}
	me := position(group, c.group[c.rank])
	if me < 0 {
		return nil, nil
	}
	for _, w := range group {
		if r := c.fromWorld(w); uint64(all[r][1]) != h {
			return nil, fmt.Errorf("commtune: Create: rank %d, a member of this rank's group, passed another group; the members of a group must all pass the same ranks in the same order", r)
		}
	}
	return c.child(mix(c.ctx, seq, createSalt, h), slices.Clone(group), me), nil
}

// groupCall identifies CreateGroup calls that must be told apart: those
// of one set of ranks and one tag.
type groupCall struct {
	set uint64 // hashRanks of the sorted members
	tag int
}

// CreateGroup makes the communicator of group (world ranks, in order), as
// MPI_Comm_create_group: only the group's members call it, each with the
// same group and tag. Nothing is sent to the other ranks of c.
//
// The context derives from c's, the set of members, the tag and how many
// calls on that set and tag came before: members make those calls in the
// same order, so they count alike, and calls on other sets or tags, which
// members of one group may interleave differently, do not disturb the
// count. The members then exchange a digest of the group's order over a
// context of that set alone, so that members passing the same ranks in
// different orders fail; members passing different sets of ranks share no
// context and wait until ctx ends.
func (c *Comm) CreateGroup(ctx context.Context, group []int, tag int) (*Comm, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if err := checkTag(tag, false, "CreateGroup"); err != nil {
		return nil, err
	}
	// The checks below depend on the group alone, so members passing the
	// same group fail alike and no member waits for one that failed.
	if err := c.inComm(group, "CreateGroup"); err != nil {
		return nil, err
	}
	me := position(group, c.group[c.rank])
	if me < 0 {
		return nil, fmt.Errorf("commtune: CreateGroup: the calling rank is not in the group; only the group's members call CreateGroup")
	}
	sorted := slices.Sorted(slices.Values(group))
	key := groupCall{hashRanks(sorted), tag}
	c.mu.Lock()
	if c.groupCalls == nil {
		c.groupCalls = map[groupCall]uint64{}
	}
	c.groupCalls[key]++
	n := c.groupCalls[key]
	c.mu.Unlock()
	base := mix(c.ctx, createGroupSalt, key.set, uint64(tag), n)
	order := hashRanks(group)
	if len(group) > 1 {
		set := c.child(base, sorted, position(sorted, c.group[c.rank]))
		all, err := set.allgatherInts(ctx, []int{int(order)})
		if err != nil {
			return nil, fmt.Errorf("commtune: CreateGroup (every member must call it with the same group and tag): %w", err)
		}
		for r, v := range all {
			if uint64(v[0]) != order {
				return nil, fmt.Errorf("commtune: CreateGroup: world rank %d passed the same ranks in another order; members must pass the same group", sorted[r])
			}
		}
	}
	return c.child(mix(base, order), slices.Clone(group), me), nil
}

// Derive makes, with no communication, the communicator of group (world
// ranks, in order), which the calling rank is in and which each of its
// members computes alike from what they share (a Cartesian sub-grid).
// Like Dup, it counts among c's derived communicators: every rank of c
// calls it, in the same order relative to Dup, Split and Create, each
// with its own group. Groups made by one call must be disjoint.
func (c *Comm) Derive(group []int) (*Comm, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if err := c.inComm(group, "Derive"); err != nil {
		return nil, err
	}
	me := position(group, c.group[c.rank])
	if me < 0 {
		return nil, fmt.Errorf("commtune: Derive: the calling rank is not in the group")
	}
	h := hashRanks(group)
	return c.child(mix(c.ctx, c.nextDerived(), deriveSalt, h), slices.Clone(group), me), nil
}
