package conformance

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/commtune/commtune"
)

// The group cases check MPI's group algebra and the communicators made
// from groups and grids. Every expectation is computed here from ranks of
// the parent communicator, independently of commtune's code: group
// contents are read back through TranslateRanks and checked against an
// Incl of the expected list, so neither path can hide a fault of the other.

// groupList returns the parent ranks of g's members in g's order, through
// TranslateRanks into the parent's group.
func groupList(g, parent *commtune.Group) ([]int, error) {
	all := make([]int, g.Size())
	for i := range all {
		all[i] = i
	}
	return g.TranslateRanks(all, parent)
}

// checkGroup checks that g holds the parent ranks want, in order, with the
// calling rank (parent rank me) at its place.
func checkGroup(what string, g, parent *commtune.Group, want []int, me int) error {
	got, err := groupList(g, parent)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s: group holds %v, want %v", what, got, want)
	}
	wantRank := slices.Index(want, me)
	if wantRank < 0 {
		wantRank = commtune.Undefined
	}
	if g.Rank() != wantRank || g.Size() != len(want) {
		return fmt.Errorf("%s: size %d rank %d, want %d %d", what, g.Size(), g.Rank(), len(want), wantRank)
	}
	ref, err := parent.Incl(want)
	if err != nil {
		return err
	}
	if rel := g.Compare(ref); rel != commtune.Ident {
		return fmt.Errorf("%s: compares %v with the Incl of %v", what, rel, want)
	}
	return nil
}

// groupAlgebra checks every group operation on random subsets of the
// communicator's ranks (a fixed seed, varied by rank so each rank checks
// its own position) against lists computed here.
func groupAlgebra(ctx context.Context, c *commtune.Comm) error {
	n, me := c.Size(), c.Rank()
	world := c.Group()
	rng := rand.New(rand.NewPCG(20240607, uint64(me)))
	subset := func() []int {
		return rng.Perm(n)[:rng.IntN(n+1)]
	}
	in := func(l []int, x int) bool { return slices.Contains(l, x) }
	for round := range 200 {
		la, lb := subset(), subset()
		a, err := world.Incl(la)
		if err != nil {
			return err
		}
		b, err := world.Incl(lb)
		if err != nil {
			return err
		}
		var union, inter, diff, excl []int
		union = slices.Clone(la)
		for _, x := range lb {
			if !in(la, x) {
				union = append(union, x)
			}
		}
		for _, x := range la {
			if in(lb, x) {
				inter = append(inter, x)
			} else {
				diff = append(diff, x)
			}
		}
		// Excl of a's positions that hold b's members leaves diff.
		var pos []int
		for i, x := range la {
			if in(lb, x) {
				pos = append(pos, i)
			}
		}
		rng.Shuffle(len(pos), func(i, j int) { pos[i], pos[j] = pos[j], pos[i] })
		for _, x := range la {
			if !in(lb, x) {
				excl = append(excl, x)
			}
		}
		// A range over a: every other position from the last down.
		var ranged, rangedOut []int
		for i := len(la) - 1; i >= 0; i -= 2 {
			ranged = append(ranged, la[i])
		}
		for i, x := range la {
			if (len(la)-1-i)%2 != 0 {
				rangedOut = append(rangedOut, x)
			}
		}
		u, err := a.Union(b)
		if err != nil {
			return err
		}
		it, err := a.Intersection(b)
		if err != nil {
			return err
		}
		d, err := a.Difference(b)
		if err != nil {
			return err
		}
		ex, err := a.Excl(pos)
		if err != nil {
			return err
		}
		ri, err := a.RangeIncl([][3]int{{len(la) - 1, 0, -2}})
		if err != nil {
			return err
		}
		re, err := a.RangeExcl([][3]int{{len(la) - 1, 0, -2}})
		if err != nil {
			return err
		}
		for _, chk := range []struct {
			name string
			g    *commtune.Group
			want []int
		}{
			{"incl", a, la}, {"union", u, union}, {"intersection", it, inter},
			{"difference", d, diff}, {"excl", ex, excl}, {"range incl", ri, ranged}, {"range excl", re, rangedOut},
		} {
			if err := checkGroup(fmt.Sprintf("round %d %s of %v and %v", round, chk.name, la, lb), chk.g, world, chk.want, me); err != nil {
				return err
			}
		}
		// TranslateRanks both ways.
		for _, tr := range []struct {
			from, to   *commtune.Group
			lfrom, lto []int
		}{{a, b, la, lb}, {b, a, lb, la}} {
			ranks := make([]int, len(tr.lfrom))
			for i := range ranks {
				ranks[i] = i
			}
			rng.Shuffle(len(ranks), func(i, j int) { ranks[i], ranks[j] = ranks[j], ranks[i] })
			got, err := tr.from.TranslateRanks(ranks, tr.to)
			if err != nil {
				return err
			}
			for i, r := range ranks {
				want := slices.Index(tr.lto, tr.lfrom[r])
				if want < 0 {
					want = commtune.Undefined
				}
				if got[i] != want {
					return fmt.Errorf("round %d: TranslateRanks(%v) from %v to %v = %v; entry %d is %d, want %d",
						round, ranks, tr.lfrom, tr.lto, got, i, got[i], want)
				}
			}
		}
		// Compare: a with itself reshuffled, with b.
		shuffled := slices.Clone(la)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		s, err := world.Incl(shuffled)
		if err != nil {
			return err
		}
		for _, cmp := range []struct {
			x, y  *commtune.Group
			lx, l []int
		}{{a, s, la, shuffled}, {a, b, la, lb}, {b, a, lb, la}} {
			want := commtune.Unequal
			switch {
			case slices.Equal(cmp.lx, cmp.l):
				want = commtune.Ident
			case len(cmp.lx) == len(cmp.l) && !slices.ContainsFunc(cmp.lx, func(x int) bool { return !in(cmp.l, x) }):
				want = commtune.Similar
			}
			if got := cmp.x.Compare(cmp.y); got != want {
				return fmt.Errorf("round %d: Compare(%v, %v) = %v, want %v", round, cmp.lx, cmp.l, got, want)
			}
		}
	}
	// All three relations occur whatever the size: an explicit check.
	rev := make([]int, n)
	for i := range rev {
		rev[i] = n - 1 - i
	}
	r, err := world.Incl(rev)
	if err != nil {
		return err
	}
	wantRev := commtune.Similar
	if n == 1 {
		wantRev = commtune.Ident
	}
	if got := world.Compare(r); got != wantRev {
		return fmt.Errorf("world against reversed: %v, want %v", got, wantRev)
	}
	if got := world.Compare(commtune.GroupEmpty); got != commtune.Unequal {
		return fmt.Errorf("world against empty: %v", got)
	}
	if got := c.Group().Compare(world); got != commtune.Ident {
		return fmt.Errorf("two groups of one communicator: %v", got)
	}
	return nil
}

// sentinel is what parent rank r contributes on communicator k of a case:
// distinct for every rank and communicator.
func sentinel(r, k int) int64 { return int64(r+1)*1_000_003 + int64(k)*7919 }

// checkMadeComm checks that m is the communicator of parent ranks want, in
// order, with the caller at its place; that an Allreduce of rank- and
// communicator-specific values sums exactly those of want; and that a ring
// of wildcard receives on m sees m's messages only, while a message on
// the parent, sent first to the same rank, waits there.
func checkMadeComm(ctx context.Context, c, m *commtune.Comm, want []int, k int) error {
	me := c.Rank()
	if m == nil {
		return fmt.Errorf("communicator %d: none, want one of parent ranks %v", k, want)
	}
	if m.Size() != len(want) || m.Rank() != slices.Index(want, me) {
		return fmt.Errorf("communicator %d: size %d rank %d, want %d %d of %v", k, m.Size(), m.Rank(), len(want), slices.Index(want, me), want)
	}
	for i, r := range want {
		if m.WorldRank(i) != c.WorldRank(r) {
			return fmt.Errorf("communicator %d: rank %d is world rank %d, want %d (parent rank %d)", k, i, m.WorldRank(i), c.WorldRank(r), r)
		}
	}
	size, r := m.Size(), m.Rank()
	next, prev := (r+1)%size, (r-1+size)%size
	// On the parent, to the same rank as the ring's message, sent first.
	decoy := binary.LittleEndian.AppendUint64(nil, uint64(-sentinel(me, k)))
	dq, err := c.Isend(decoy, want[next], 9)
	if err != nil {
		return err
	}
	got := []int64{0}
	if err := commtune.Allreduce(ctx, m, []int64{sentinel(me, k)}, got, commtune.Sum); err != nil {
		return fmt.Errorf("communicator %d: %w", k, err)
	}
	var sum int64
	for _, x := range want {
		sum += sentinel(x, k)
	}
	if got[0] != sum {
		return fmt.Errorf("communicator %d of %v: Allreduce gave %d, want %d", k, want, got[0], sum)
	}
	in := make([]byte, 16)
	st, err := m.Sendrecv(ctx, binary.LittleEndian.AppendUint64(nil, uint64(sentinel(me, k))), next, 9, in, commtune.AnySource, commtune.AnyTag)
	if err != nil {
		return fmt.Errorf("communicator %d ring: %w", k, err)
	}
	if v := int64(binary.LittleEndian.Uint64(in)); st.Source != prev || st.Count != 8 || v != sentinel(want[prev], k) {
		return fmt.Errorf("communicator %d ring: got %d from %d (%d bytes), want %d from %d", k, v, st.Source, st.Count, sentinel(want[prev], k), prev)
	}
	st, err = c.Recv(ctx, in, want[prev], 9)
	if err != nil {
		return err
	}
	if v := int64(binary.LittleEndian.Uint64(in)); st.Count != 8 || v != -sentinel(want[prev], k) {
		return fmt.Errorf("communicator %d: the parent's message from %d is %d, want %d", k, want[prev], v, -sentinel(want[prev], k))
	}
	_, err = dq.Wait(ctx)
	return err
}

// createFromGroup: Create with one group for every rank (the ranks but
// rank 0, reversed; members alone get a communicator), then with disjoint
// groups (even and odd ranks, each passing its own), then the empty group.
func createFromGroup(ctx context.Context, parent *commtune.Comm) error {
	// On a Dup, so that messages other cases left on the parent cannot
	// meet checkMadeComm's.
	c, err := parent.Dup()
	if err != nil {
		return err
	}
	defer c.Close()
	n, me := c.Size(), c.Rank()
	world := c.Group()
	var rev []int
	for r := n - 1; r >= min(1, n-1); r-- {
		rev = append(rev, r)
	}
	g, err := world.Incl(rev)
	if err != nil {
		return err
	}
	m, err := c.Create(ctx, g)
	if err != nil {
		return err
	}
	if slices.Contains(rev, me) {
		if err := checkMadeComm(ctx, c, m, rev, 1); err != nil {
			return err
		}
		m.Close()
	} else if m != nil {
		return fmt.Errorf("rank %d is not in %v but got a communicator of %d", me, rev, m.Size())
	}
	var mine []int
	for r := me % 2; r < n; r += 2 {
		mine = append(mine, r)
	}
	if g, err = world.Incl(mine); err != nil {
		return err
	}
	if m, err = c.Create(ctx, g); err != nil {
		return err
	}
	defer m.Close()
	if err := checkMadeComm(ctx, c, m, mine, 2+me%2); err != nil {
		return err
	}
	// Everyone passing the empty group gets nothing.
	m, err = c.Create(ctx, commtune.GroupEmpty)
	if err != nil || m != nil {
		return fmt.Errorf("Create of the empty group: %v, %v", m, err)
	}
	return c.Barrier(ctx)
}

// createGroupHalf: the even ranks make communicators with CreateGroup —
// twice with the same group and tag, once more reversed with another tag
// — while the odd ranks exchange messages on the parent; each even rank
// has a wildcard receive posted on the parent throughout, which only an
// odd rank's message must match. The parent is a Dup of c, as is the
// communicator of checkMadeComm's messages.
func createGroupHalf(ctx context.Context, world *commtune.Comm) error {
	// On a Dup, so that messages other cases left on the world cannot
	// meet the wildcard receive.
	c, err := world.Dup()
	if err != nil {
		return err
	}
	defer c.Close()
	n, me := c.Size(), c.Rank()
	var evens, odds []int
	for r := range n {
		if r%2 == 0 {
			evens = append(evens, r)
		} else {
			odds = append(odds, r)
		}
	}
	const tagLate = 11
	decoys, err := world.Dup()
	if err != nil {
		return err
	}
	defer decoys.Close()
	if me%2 == 1 {
		// Unrelated traffic on the parent among the odd ranks, then a
		// message to the even rank below.
		k := slices.Index(odds, me)
		next, prev := odds[(k+1)%len(odds)], odds[(k-1+len(odds))%len(odds)]
		for i := range 20 {
			in := make([]byte, 8)
			out := binary.LittleEndian.AppendUint64(nil, uint64(sentinel(me, 100+i)))
			if _, err := c.Sendrecv(ctx, out, next, i, in, prev, i); err != nil {
				return err
			}
			if v := int64(binary.LittleEndian.Uint64(in)); v != sentinel(prev, 100+i) {
				return fmt.Errorf("odd ring step %d: got %d, want %d", i, v, sentinel(prev, 100+i))
			}
		}
		return c.Send(ctx, binary.LittleEndian.AppendUint64(nil, uint64(sentinel(me, 99))), me-1, tagLate)
	}
	late := make([]byte, 16)
	var lq *commtune.Request
	if me+1 < n {
		var err error
		if lq, err = c.Irecv(late, commtune.AnySource, commtune.AnyTag); err != nil {
			return err
		}
	}
	all := c.Group()
	g, err := all.Incl(evens)
	if err != nil {
		return err
	}
	rev := slices.Clone(evens)
	slices.Reverse(rev)
	rg, err := all.Incl(rev)
	if err != nil {
		return err
	}
	var made []*commtune.Comm
	for k, call := range []struct {
		g    *commtune.Group
		tag  int
		want []int
	}{{g, 5, evens}, {g, 5, evens}, {rg, 6, rev}} {
		m, err := c.CreateGroup(ctx, call.g, call.tag)
		if err != nil {
			return fmt.Errorf("CreateGroup %d: %w", k, err)
		}
		defer m.Close()
		// The parent's decoys go on a Dup, apart from the wildcard
		// receive posted on c.
		if err := checkMadeComm(ctx, decoys, m, call.want, 10+k); err != nil {
			return err
		}
		made = append(made, m)
	}
	// The two made with the same group and tag are apart: messages sent on
	// the first are not received on the second.
	size, r := made[0].Size(), made[0].Rank()
	for i, m := range made[:2] {
		if _, err := m.Isend(binary.LittleEndian.AppendUint64(nil, uint64(sentinel(me, 200+i))), (r+1)%size, 4); err != nil {
			return err
		}
	}
	for i := 1; i >= 0; i-- {
		in := make([]byte, 8)
		if _, err := made[i].Recv(ctx, in, commtune.AnySource, commtune.AnyTag); err != nil {
			return err
		}
		prev := evens[(r-1+size)%size]
		if v := int64(binary.LittleEndian.Uint64(in)); v != sentinel(prev, 200+i) {
			return fmt.Errorf("communicator %d of the same group and tag received %d, want %d", i, v, sentinel(prev, 200+i))
		}
	}
	if lq != nil {
		st, err := lq.Wait(ctx)
		if err != nil {
			return err
		}
		if v := int64(binary.LittleEndian.Uint64(late)); st.Source != me+1 || st.Tag != tagLate || v != sentinel(me+1, 99) {
			return fmt.Errorf("the parent's wildcard receive got %d from %d tag %d, want %d from %d tag %d",
				v, st.Source, st.Tag, sentinel(me+1, 99), me+1, tagLate)
		}
	}
	return nil
}

// cartSub splits balanced grids of the communicator's ranks, in two and
// three dimensions, open and periodic, by every combination of kept
// dimensions, and checks each sub-grid against MPI_Cart_sub's rule
// computed from coordinates, with traffic.
func cartSub(ctx context.Context, c *commtune.Comm) error {
	n := c.Size()
	k := 0
	for _, ndims := range []int{2, 3} {
		dims := make([]int, ndims)
		if err := commtune.DimsCreate(n, dims); err != nil {
			return err
		}
		coords := func(r int) []int {
			out := make([]int, ndims)
			for d := ndims - 1; d >= 0; d-- {
				out[d] = r % dims[d]
				r /= dims[d]
			}
			return out
		}
		for _, periodic := range []bool{false, true} {
			periods := make([]bool, ndims)
			for d := range periods {
				periods[d] = periodic && d%2 == 0
			}
			cart, err := c.Cart(dims, periods)
			if err != nil {
				return err
			}
			me := cart.Comm().Rank()
			for mask := range 1 << ndims {
				remain := make([]bool, ndims)
				var wantDims []int
				for d := range remain {
					remain[d] = mask&(1<<d) != 0
					if remain[d] {
						wantDims = append(wantDims, dims[d])
					}
				}
				// The members: ranks whose coordinates match the caller's
				// in every dimension dropped, in rank order.
				var want []int
				for q := range n {
					same := true
					for d := range remain {
						if !remain[d] && coords(q)[d] != coords(me)[d] {
							same = false
						}
					}
					if same {
						want = append(want, q)
					}
				}
				s, err := cart.Sub(remain)
				if err != nil {
					return err
				}
				if !slices.Equal(s.Dims(), wantDims) {
					return fmt.Errorf("grid %v remain %v: dims %v, want %v", dims, remain, s.Dims(), wantDims)
				}
				k++
				if err := checkMadeComm(ctx, cart.Comm(), s.Comm(), want, 1000+k); err != nil {
					return fmt.Errorf("grid %v periods %v remain %v: %w", dims, periods, remain, err)
				}
				s.Comm().Close()
			}
			cart.Comm().Close()
		}
	}
	return nil
}
