package commtune

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// checkMade checks that n is the communicator of world ranks want, with
// the caller at its place, and that it carries a ring and an Allreduce.
func checkMade(ctx context.Context, n *Comm, want []int, me int) error {
	if n == nil {
		return fmt.Errorf("no communicator, want one of %v", want)
	}
	if n.Size() != len(want) || n.Rank() != slices.Index(want, me) {
		return fmt.Errorf("size %d rank %d, want %d %d of %v", n.Size(), n.Rank(), len(want), slices.Index(want, me), want)
	}
	for r, w := range want {
		if n.WorldRank(r) != w {
			return fmt.Errorf("rank %d is world rank %d, want %d of %v", r, n.WorldRank(r), w, want)
		}
	}
	sum := []int64{0}
	if err := Allreduce(ctx, n, []int64{int64(me*me + 1)}, sum, Sum); err != nil {
		return err
	}
	var wantSum int64
	for _, w := range want {
		wantSum += int64(w*w + 1)
	}
	if sum[0] != wantSum {
		return fmt.Errorf("Allreduce gave %d, want %d", sum[0], wantSum)
	}
	size, r := n.Size(), n.Rank()
	in := []byte{0xFF}
	if _, err := n.Sendrecv(ctx, []byte{byte(me)}, (r+1)%size, 3, in, (r-1+size)%size, 3); err != nil {
		return err
	}
	if prev := want[(r-1+size)%size]; in[0] != byte(prev) {
		return fmt.Errorf("ring gave %d, want world rank %d", in[0], prev)
	}
	return nil
}

func TestCreate(t *testing.T) {
	const n = 5
	evens, odds, all, rev := []int{0, 2, 4}, []int{1, 3}, []int{0, 1, 2, 3, 4}, []int{4, 3, 2, 1, 0}
	for _, tc := range []struct {
		name  string
		group func(me int) []int // world ranks to pass; nil: GroupEmpty
		want  func(me int) []int // the communicator the rank gets; nil: none
	}{
		{"evens", func(int) []int { return evens }, func(me int) []int { return pick(me%2 == 0, evens) }},
		{"all reversed", func(int) []int { return rev }, func(int) []int { return rev }},
		{"disjoint", func(me int) []int { return pick(me%2 == 0, evens, odds) }, func(me int) []int { return pick(me%2 == 0, evens, odds) }},
		{"members only", func(me int) []int { return pick(me < 2, []int{1, 0}) }, func(me int) []int { return pick(me < 2, []int{1, 0}) }},
		{"empty", func(int) []int { return nil }, func(int) []int { return nil }},
		{"singletons", func(me int) []int { return []int{me} }, func(me int) []int { return []int{me} }},
		{"all", func(int) []int { return all }, func(int) []int { return all }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Local(n, func(c *Comm) error {
				ctx := t.Context()
				me := c.Rank()
				g := GroupEmpty
				if w := tc.group(me); w != nil {
					var err error
					if g, err = c.Group().Incl(w); err != nil {
						return err
					}
				}
				made, err := c.Create(ctx, g)
				if err != nil {
					return err
				}
				if want := tc.want(me); want == nil {
					if made != nil {
						return fmt.Errorf("got a communicator of %d ranks, want none", made.Size())
					}
				} else {
					defer made.Close()
					if err := checkMade(ctx, made, want, me); err != nil {
						return err
					}
				}
				// The parent still works, unaffected.
				return checkMade(ctx, c, all, me)
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// pick returns a when ok, else b (nil when not given).
func pick(ok bool, a []int, b ...[]int) []int {
	if ok {
		return a
	}
	if len(b) > 0 {
		return b[0]
	}
	return nil
}

// TestCreateErrors: a bad group on any rank fails every rank; a member
// whose group's members passed another group fails. No rank waits.
func TestCreateErrors(t *testing.T) {
	const n = 4
	for _, tc := range []struct {
		name string
		// group returns the group rank me passes, made from its world
		// group w and the group shared by rank 0 (another rank's).
		group func(me int, w, shared *Group) (*Group, error)
		want  func(me int) string // "" for success
	}{
		{"nil on rank 1", func(me int, w, _ *Group) (*Group, error) {
			if me == 1 {
				return nil, nil
			}
			return w, nil
		}, func(me int) string { return pick2(me == 1, "Create: nil group", "Create: rank 1 passed a bad group") }},
		{"another rank's", func(me int, w, shared *Group) (*Group, error) { return shared, nil },
			func(me int) string {
				return pick2(me == 0, "Create: rank 1 passed a bad group", "the group belongs to world rank 0")
			}},
		{"order differs on rank 0", func(me int, w, _ *Group) (*Group, error) {
			if me == 0 {
				return w.Incl([]int{3, 2, 1, 0})
			}
			return w, nil
		}, func(me int) string {
			return pick2(me == 0, "rank 3, a member of this rank's group, passed another group", "rank 0, a member")
		}},
		{"rank 3 left out by rank 0", func(me int, w, _ *Group) (*Group, error) {
			if me == 0 {
				return w.Incl([]int{0, 1, 2})
			}
			return w, nil
		}, func(me int) string {
			// Every rank's group holds a rank that passed another one.
			return pick2(me == 0, "rank 1, a member", "rank 0, a member")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu     sync.Mutex
				shared *Group
			)
			errs := make([]error, n)
			err := Local(n, func(c *Comm) error {
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				defer cancel()
				w := c.Group()
				if c.Rank() == 0 {
					mu.Lock()
					shared = w
					mu.Unlock()
				}
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				mu.Lock()
				s := shared
				mu.Unlock()
				g, err := tc.group(c.Rank(), w, s)
				if err != nil {
					return err
				}
				_, errs[c.Rank()] = c.Create(ctx, g)
				if errors.Is(errs[c.Rank()], context.DeadlineExceeded) {
					return errs[c.Rank()]
				}
				// Every rank still makes the same calls afterwards.
				return c.Barrier(ctx)
			})
			if err != nil {
				t.Fatal(err)
			}
			for r, err := range errs {
				want := tc.want(r)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("rank %d: %v, want an error containing %q", r, err, want)
				}
			}
		})
	}
}

func pick2(ok bool, a, b string) string {
	if ok {
		return a
	}
	return b
}

// TestCreateGroup: members alone make communicators, each call its own
// context; the other ranks are busy elsewhere.
func TestCreateGroup(t *testing.T) {
	err := Local(4, func(c *Comm) error {
		ctx := t.Context()
		me := c.Rank()
		w := c.Group()
		if me%2 == 1 {
			// The odd ranks talk among themselves meanwhile.
			g, err := w.Incl([]int{3, 1})
			if err != nil {
				return err
			}
			o, err := c.CreateGroup(ctx, g, 0)
			if err != nil {
				return err
			}
			return checkMade(ctx, o, []int{3, 1}, me)
		}
		g, err := w.Incl([]int{0, 2})
		if err != nil {
			return err
		}
		var made [3]*Comm
		for i, tag := range []int{7, 7, TagUB} {
			if made[i], err = c.CreateGroup(ctx, g, tag); err != nil {
				return err
			}
			if err := checkMade(ctx, made[i], []int{0, 2}, me); err != nil {
				return err
			}
		}
		// Messages on each communicator stay there: rank 0 sends on each,
		// in order, and rank 2 receives in the reverse order.
		if me == 0 {
			for i, m := range made {
				if err := SendSlice(ctx, m, []int32{int32(100 + i)}, 1, 0); err != nil {
					return err
				}
			}
			return nil
		}
		for i := len(made) - 1; i >= 0; i-- {
			in := []int32{0}
			if _, err := RecvSlice(ctx, made[i], in, 0, 0); err != nil {
				return err
			}
			if in[0] != int32(100+i) {
				return fmt.Errorf("communicator %d received %d, want %d", i, in[0], 100+i)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCreateGroupErrors(t *testing.T) {
	err := Local(3, func(c *Comm) error {
		ctx := t.Context()
		me := c.Rank()
		w := c.Group()
		check := func(err error, want string) error {
			if err == nil || !strings.Contains(err.Error(), want) {
				return fmt.Errorf("got %v, want an error containing %q", err, want)
			}
			return nil
		}
		g01, _ := w.Incl([]int{0, 1})
		g10, _ := w.Incl([]int{1, 0})
		if me == 2 {
			_, err := c.CreateGroup(ctx, g01, 0)
			if err := check(err, "the calling rank is not in the group"); err != nil {
				return err
			}
		}
		for _, tc := range []struct {
			g    *Group
			tag  int
			want string
		}{
			{w, -1, "tag -1 outside"},
			{w, TagUB + 1, "outside [0, TagUB"},
			{nil, 0, "CreateGroup: nil group"},
		} {
			_, err := c.CreateGroup(ctx, tc.g, tc.tag)
			if err := check(err, tc.want); err != nil {
				return err
			}
		}
		// A group with a rank the communicator lacks: every member sees it.
		sub, err := c.Split(ctx, min(me, 1), 0) // {0} and {1, 2}
		if err != nil {
			return err
		}
		if me > 0 {
			g12, _ := w.Incl([]int{1, 2, 0})
			_, err := sub.CreateGroup(ctx, g12, 0)
			if err := check(err, "holds world rank 0, which is not in the communicator"); err != nil {
				return err
			}
		}
		// The same ranks in different orders.
		if me < 2 {
			_, err := c.CreateGroup(ctx, map[bool]*Group{true: g01, false: g10}[me == 0], 1)
			if err := check(err, "passed the same ranks in another order"); err != nil {
				return err
			}
		}
		// Different ranks: the members never meet, and wait until ctx ends.
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if me < 2 {
			g := map[bool]*Group{true: g01, false: w}[me == 0]
			_, err := c.CreateGroup(short, g, 2)
			if !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("groups of different ranks: %v, want the context's end", err)
			}
		}
		return c.Barrier(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
}
