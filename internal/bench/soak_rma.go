package bench

import (
	"context"
	"math/rand/v2"

	"github.com/commtune/commtune"
)

// soakWindow makes a window of n uint32 on c, from AllocWindow or
// NewWindow as alloc says; both start zeroed.
func soakWindow(ctx context.Context, c *commtune.Comm, alloc bool, n int) (*commtune.Window[uint32], error) {
	if alloc {
		return commtune.AllocWindow[uint32](ctx, c, n)
	}
	return commtune.NewWindow(ctx, c, make([]uint32, n))
}

// rmaFence: a window made and freed in the step; between fences each rank
// puts its payload into its right neighbour's first half and accumulates
// (sum) another into every rank's second half, then gets back what it put.
func (s *soakRank) rmaFence(c *commtune.Comm, rng *rand.Rand) (string, error) {
	n, me := c.Size(), c.Rank()
	m := 1 + logUniform(rng, s.cfg.MaxSize/16)
	alloc := rng.IntN(2) == 0
	name := "rma fence new-window"
	if alloc {
		name = "rma fence alloc-window"
	}
	w, err := soakWindow(s.ctx, c, alloc, 2*m)
	if err != nil {
		return name, err
	}
	right, left := (me+1)%n, (me+n-1)%n
	put, acc, got := make([]uint32, m), make([]uint32, m), make([]uint32, m)
	SoakFill(commtune.Bytes(put), s.id(me, 1))
	SoakFill(commtune.Bytes(acc), s.id(me, 2))
	err = func() error {
		if err := w.Fence(s.ctx); err != nil {
			return err
		}
		if err := w.Put(s.ctx, put, right, 0); err != nil {
			return err
		}
		for t := range n {
			if err := w.Accumulate(s.ctx, acc, t, m, commtune.Sum); err != nil {
				return err
			}
		}
		if err := w.Fence(s.ctx); err != nil {
			return err
		}
		local := w.Local()
		s.expect(name+" put", me, commtune.Bytes(local[:m]), s.id(left, 1), 0)
		s.expectReduced(name+" accumulate", me, local[m:], soakReductions[0], 0, n, 2, 0)
		if err := w.Get(s.ctx, got, right, 0); err != nil {
			return err
		}
		if err := w.Fence(s.ctx); err != nil {
			return err
		}
		s.expect(name+" get", me, commtune.Bytes(got), s.id(me, 1), 0)
		return nil
	}()
	if ferr := w.Free(s.ctx); err == nil {
		err = ferr
	}
	return name, err
}

// rmaLock: a window made and freed in the step; each rank accumulates its
// payload into the rank k ahead under Lock (shared or exclusive) and
// Unlock, and takes a ticket from a counter on rank 0 (FetchAndOp); after
// a barrier each checks its memory, then gets back what it added under a
// shared lock.
func (s *soakRank) rmaLock(c *commtune.Comm, rng *rand.Rand) (string, error) {
	n, me := c.Size(), c.Rank()
	m := 1 + logUniform(rng, s.cfg.MaxSize/16)
	alloc := rng.IntN(2) == 0
	kind := commtune.LockShared
	name := "rma lock-shared"
	if rng.IntN(2) == 0 {
		kind, name = commtune.LockExclusive, "rma lock-exclusive"
	}
	if alloc {
		name += " alloc-window"
	} else {
		name += " new-window"
	}
	k := 1 + rng.IntN(max(n-1, 1))
	target, origin := (me+k)%n, (me-k%n+n)%n
	w, err := soakWindow(s.ctx, c, alloc, m+1)
	if err != nil {
		return name, err
	}
	acc, got := make([]uint32, m), make([]uint32, m)
	SoakFill(commtune.Bytes(acc), s.id(me, 3))
	err = func() error {
		if err := w.Lock(s.ctx, kind, target); err != nil {
			return err
		}
		if err := w.Accumulate(s.ctx, acc, target, 0, commtune.Sum); err != nil {
			return err
		}
		if err := w.Unlock(s.ctx, target); err != nil {
			return err
		}
		if err := w.Lock(s.ctx, commtune.LockShared, 0); err != nil {
			return err
		}
		if _, err := w.FetchAndOp(s.ctx, 1, 0, m, commtune.Sum); err != nil {
			return err
		}
		if err := w.Unlock(s.ctx, 0); err != nil {
			return err
		}
		if err := c.Barrier(s.ctx); err != nil {
			return err
		}
		w.Sync() // what the others did through this rank's agent
		local := w.Local()
		s.expect(name+" accumulate", me, commtune.Bytes(local[:m]), s.id(origin, 3), 0)
		if me == 0 && local[m] != uint32(n) {
			s.errs.other(s.step, name+" fetch-and-op", me, "counter %d after %d ranks took a ticket each", local[m], n)
		}
		if err := c.Barrier(s.ctx); err != nil {
			return err
		}
		if err := w.Lock(s.ctx, commtune.LockShared, target); err != nil {
			return err
		}
		if err := w.Get(s.ctx, got, target, 0); err != nil {
			return err
		}
		if err := w.Unlock(s.ctx, target); err != nil {
			return err
		}
		s.expect(name+" get", me, commtune.Bytes(got), s.id(me, 3), 0)
		return c.Barrier(s.ctx)
	}()
	if ferr := w.Free(s.ctx); err == nil {
		err = ferr
	}
	return name, err
}
