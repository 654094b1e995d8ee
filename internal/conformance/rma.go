package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/commtune/commtune"
)

// The one-sided cases run each check on both kinds of window: NewWindow
// over the program's memory (between processes: through the targets'
// agents) and AllocWindow (between processes of a node: in place in a
// shared mapping). Goroutine ranks reach every window in place.

type windowMaker[T commtune.Number] struct {
	name string
	make func(ctx context.Context, c *commtune.Comm, n int) (*commtune.Window[T], error)
}

func makers[T commtune.Number]() []windowMaker[T] {
	return []windowMaker[T]{
		{"new", func(ctx context.Context, c *commtune.Comm, n int) (*commtune.Window[T], error) {
			return commtune.NewWindow(ctx, c, make([]T, n))
		}},
		{"alloc", func(ctx context.Context, c *commtune.Comm, n int) (*commtune.Window[T], error) {
			return commtune.AllocWindow[T](ctx, c, n)
		}},
	}
}

// forEachWindow runs check on a fresh window of n elements of each kind.
func forEachWindow[T commtune.Number](ctx context.Context, c *commtune.Comm, n int, check func(w *commtune.Window[T]) error) error {
	for _, m := range makers[T]() {
		w, err := m.make(ctx, c, n)
		if err != nil {
			return fmt.Errorf("%s window: %w", m.name, err)
		}
		if err := check(w); err != nil {
			return fmt.Errorf("%s window: %w", m.name, err)
		}
		if err := w.Free(ctx); err != nil {
			return fmt.Errorf("%s window: free: %w", m.name, err)
		}
	}
	return nil
}

// cellValue is what rank origin writes in cell i of target's window: no
// two (origin, target, cell) alike, and never the zero a fresh window holds.
func cellValue(origin, target, i int) int64 {
	return int64(origin+1)*1_000_000 + int64(target)*1_000 + int64(i) + 1
}

// rmaFence: each rank puts a row into its right neighbour's window, gets a
// row from its left one, between fences; every cell is checked against its
// writer.
func rmaFence(ctx context.Context, c *commtune.Comm) error {
	n, me := c.Size(), c.Rank()
	const cells = 5000 // 40 000 bytes: a put through an agent sends its data apart (putDataMin)
	right, left := (me+1)%n, (me+n-1)%n
	return forEachWindow(ctx, c, 2*cells, func(w *commtune.Window[int64]) error {
		if err := w.Fence(ctx); err != nil {
			return err
		}
		row := make([]int64, cells)
		for i := range row {
			row[i] = cellValue(me, right, i)
		}
		if err := w.Put(ctx, row, right, cells); err != nil {
			return err
		}
		if err := w.Fence(ctx); err != nil {
			return err
		}
		local := w.Local()
		for i := range cells {
			if local[i] != 0 || local[cells+i] != cellValue(left, me, i) {
				return fmt.Errorf("after fence, cell %d = %d and %d = %d, want 0 and %d", i, local[i], cells+i, local[cells+i], cellValue(left, me, i))
			}
		}
		got := make([]int64, cells)
		if err := w.Get(ctx, got, left, cells); err != nil {
			return err
		}
		for i, v := range got {
			if want := cellValue((left+n-1)%n, left, i); v != want {
				return fmt.Errorf("get from rank %d: cell %d = %d, want %d", left, i, v, want)
			}
		}
		return w.Fence(ctx)
	})
}

// rmaAccumulate: every rank adds to every element of every rank's window,
// k times, under LockAll, in three element types (8-byte integers and
// floats by atomic operations, 2-byte integers under the accumulate lock);
// each element must end at exactly size·k·(its increment).
func rmaAccumulate(ctx context.Context, c *commtune.Comm) error {
	if err := accumulateAll[int64](ctx, c, 200); err != nil {
		return fmt.Errorf("int64: %w", err)
	}
	if err := accumulateAll[float64](ctx, c, 100); err != nil {
		return fmt.Errorf("float64: %w", err)
	}
	if err := accumulateAll[int16](ctx, c, 50); err != nil {
		return fmt.Errorf("int16: %w", err)
	}
	return nil
}

func accumulateAll[T int64 | float64 | int16](ctx context.Context, c *commtune.Comm, k int) error {
	n := c.Size()
	const cells = 5
	return forEachWindow(ctx, c, cells, func(w *commtune.Window[T]) error {
		if err := w.LockAll(ctx); err != nil {
			return err
		}
		inc := make([]T, cells)
		for i := range inc {
			inc[i] = T(i + 1)
		}
		for range k {
			for t := range n {
				if err := w.Accumulate(ctx, inc, t, 0, commtune.Sum); err != nil {
					return err
				}
			}
		}
		if err := w.UnlockAll(ctx); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		w.Sync() // what other ranks did through this rank's agent
		for i, v := range w.Local() {
			if want := T(n * k * (i + 1)); v != want {
				return fmt.Errorf("element %d = %v after %d ranks added %d × %d, want %v", i, v, n, k, i+1, want)
			}
		}
		return c.Barrier(ctx)
	})
}

// rmaFetchAndOp: every rank takes k tickets from a counter on the last
// rank with FetchAndOp under LockAll; the tickets all ranks got are
// exactly 0 … n·k−1, each once, and the counter ends at n·k. Then the
// same with CompareAndSwap loops.
func rmaFetchAndOp(ctx context.Context, c *commtune.Comm) error {
	n, owner := c.Size(), c.Size()-1
	const k = 300
	return forEachWindow(ctx, c, 2, func(w *commtune.Window[int64]) error {
		if err := w.LockAll(ctx); err != nil {
			return err
		}
		mine := make([]int64, 0, 2*k)
		for range k {
			t, err := w.FetchAndOp(ctx, 1, owner, 0, commtune.Sum)
			if err != nil {
				return err
			}
			mine = append(mine, t)
		}
		for range k {
			for {
				old, err := w.FetchAndOp(ctx, 0, owner, 1, commtune.NoOp)
				if err != nil {
					return err
				}
				got, err := w.CompareAndSwap(ctx, old, old+1, owner, 1)
				if err != nil {
					return err
				}
				if got == old {
					mine = append(mine, 1_000_000+old)
					break
				}
			}
		}
		if err := w.UnlockAll(ctx); err != nil {
			return err
		}
		all, err := commtune.AllgatherValues(ctx, c, mine)
		if err != nil {
			return err
		}
		var tickets []int64
		for _, t := range all {
			tickets = append(tickets, t...)
		}
		slices.Sort(tickets)
		for i := range n * k {
			if tickets[i] != int64(i) || tickets[n*k+i] != int64(1_000_000+i) {
				return fmt.Errorf("tickets %d: %d and %d, want %d and %d (a ticket given twice or lost)", i, tickets[i], tickets[n*k+i], i, 1_000_000+i)
			}
		}
		if c.Rank() == owner {
			w.Sync() // what other ranks did through this rank's agent
			if l := w.Local(); l[0] != int64(n*k) || l[1] != int64(n*k) {
				return fmt.Errorf("counters end at %d and %d, want %d", l[0], l[1], n*k)
			}
		}
		return c.Barrier(ctx)
	})
}

// rmaExclusive: each rank increments a counter on rank 0 k times by Get,
// then Put of the value plus one — not atomic, so the count comes out
// exact only if exclusive locks serialise the ranks.
func rmaExclusive(ctx context.Context, c *commtune.Comm) error {
	const k = 100
	return forEachWindow(ctx, c, 1, func(w *commtune.Window[int64]) error {
		v := make([]int64, 1)
		for range k {
			if err := w.Lock(ctx, commtune.LockExclusive, 0); err != nil {
				return err
			}
			if err := w.Get(ctx, v, 0, 0); err != nil {
				return err
			}
			v[0]++
			if err := w.Put(ctx, v, 0, 0); err != nil {
				return err
			}
			if err := w.Unlock(ctx, 0); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 0 {
			w.Sync() // what other ranks did through this rank's agent
			if got := w.Local()[0]; got != int64(c.Size()*k) {
				return fmt.Errorf("counter = %d after %d ranks × %d locked increments, want %d", got, c.Size(), k, c.Size()*k)
			}
		}
		return c.Barrier(ctx)
	})
}

// rmaPSCW: a ring of post-start-complete-wait epochs: each rank exposes
// its window to its left neighbour, which puts a row into it.
func rmaPSCW(ctx context.Context, c *commtune.Comm) error {
	n, me := c.Size(), c.Rank()
	right, left := (me+1)%n, (me+n-1)%n
	const cells = 64
	return forEachWindow(ctx, c, cells, func(w *commtune.Window[int64]) error {
		world := c.Group()
		lefts, err := world.Incl([]int{left})
		if err != nil {
			return err
		}
		rights, err := world.Incl([]int{right})
		if err != nil {
			return err
		}
		for round := range 3 {
			if err := w.Post(ctx, lefts); err != nil {
				return err
			}
			if err := w.Start(ctx, rights); err != nil {
				return err
			}
			row := make([]int64, cells)
			for i := range row {
				row[i] = cellValue(me, right, i+round)
			}
			if err := w.Put(ctx, row, right, 0); err != nil {
				return err
			}
			if err := w.Complete(ctx); err != nil {
				return err
			}
			if err := w.WaitExposure(ctx); err != nil {
				return err
			}
			for i, v := range w.Local() {
				if want := cellValue(left, me, i+round); v != want {
					return fmt.Errorf("round %d: cell %d = %d, want %d", round, i, v, want)
				}
			}
		}
		return nil
	})
}

// rmaPassive: rank 0 computes for 2 s without calling the library, while
// the others lock its window, write their rows (accumulates with Replace)
// and unlock; rank 0 watches its own memory and must see every row land
// during the computation.
func rmaPassive(ctx context.Context, c *commtune.Comm) error {
	n, me := c.Size(), c.Rank()
	const cells = 16
	return forEachWindow(ctx, c, n*cells, func(w *commtune.Window[int64]) error {
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if me != 0 {
			row := make([]int64, cells)
			for i := range row {
				row[i] = cellValue(me, 0, i)
			}
			if err := w.Lock(ctx, commtune.LockExclusive, 0); err != nil {
				return err
			}
			// Replace, not Put: rank 0 reads its memory during the epoch,
			// which only atomic writes make well-defined.
			if err := w.Accumulate(ctx, row, 0, me*cells, commtune.Replace); err != nil {
				return err
			}
			if err := w.Unlock(ctx, 0); err != nil {
				return err
			}
			return c.Barrier(ctx)
		}
		local := w.Local()
		landed := func() bool {
			for r := 1; r < n; r++ {
				p := (*int64)(unsafe.Pointer(&local[r*cells+cells-1]))
				if atomic.LoadInt64(p) != cellValue(r, 0, cells-1) {
					return false
				}
			}
			return true
		}
		start, seen := time.Now(), false
		x := uint64(1)
		for time.Since(start) < 2*time.Second {
			for range 1000 { // the computation: no call into the library
				x = x*6364136223846793005 + 1442695040888963407
			}
			seen = seen || landed()
		}
		if !seen {
			return fmt.Errorf("rows of ranks 1…%d did not land while rank 0 computed for 2 s (%x)", n-1, x>>63)
		}
		return c.Barrier(ctx)
	})
}

// rmaMisuse: what MPI calls erroneous is an error naming the problem, and
// the target's memory is untouched.
func rmaMisuse(ctx context.Context, c *commtune.Comm) error {
	n, me := c.Size(), c.Rank()
	target := (me + 1) % n
	for _, m := range makers[int64]() {
		w, err := m.make(ctx, c, 4)
		if err != nil {
			return err
		}
		if err := misuseWindow(ctx, w, target, n); err != nil {
			return fmt.Errorf("%s window: %w", m.name, err)
		}
		if err := w.Free(ctx); err != nil {
			return fmt.Errorf("%s window: free: %w", m.name, err)
		}
		if err := w.Put(ctx, []int64{1}, target, 0); !errors.Is(err, commtune.ErrWindowFreed) {
			return fmt.Errorf("%s window: put after free: %v", m.name, err)
		}
	}
	// Element types that differ between ranks make no window, on any rank.
	var werr error
	if me == 0 {
		_, werr = commtune.NewWindow(ctx, c, make([]int32, 4))
	} else {
		_, werr = commtune.NewWindow(ctx, c, make([]float32, 4))
	}
	if n > 1 && werr == nil {
		return errors.New("windows of int32 and float32 made without error")
	}
	if _, err := commtune.AllocWindow[int64](ctx, c, -1); err == nil {
		return errors.New("AllocWindow of -1 elements: no error")
	}
	return c.Barrier(ctx)
}

func misuseWindow(ctx context.Context, w *commtune.Window[int64], target, n int) error {
	for _, ck := range []struct {
		what string
		err  error
	}{
		{"put outside an epoch", w.Put(ctx, []int64{-1}, target, 0)},
		{"get outside an epoch", w.Get(ctx, make([]int64, 1), target, 0)},
		{"unlock without lock", w.Unlock(ctx, target)},
		{"complete without start", w.Complete(ctx)},
		{"wait without post", w.WaitExposure(ctx)},
		{"flush outside a passive epoch", w.Flush(ctx, target)},
		{"unlock-all without lock-all", w.UnlockAll(ctx)},
	} {
		if !errors.Is(ck.err, commtune.ErrEpoch) {
			return fmt.Errorf("%s: %v, want ErrEpoch", ck.what, ck.err)
		}
	}
	if err := w.Lock(ctx, commtune.LockShared, target); err != nil {
		return err
	}
	if err := w.Lock(ctx, commtune.LockShared, target); !errors.Is(err, commtune.ErrEpoch) {
		return fmt.Errorf("second lock: %v, want ErrEpoch", err)
	}
	if err := w.Free(ctx); !errors.Is(err, commtune.ErrEpoch) {
		return fmt.Errorf("free inside a lock: %v, want ErrEpoch", err)
	}
	for _, bad := range []struct {
		what string
		err  error
	}{
		{"put past the end", w.Put(ctx, []int64{-1, -1}, target, 3)},
		{"negative displacement", w.Put(ctx, []int64{-1}, target, -1)},
		{"target out of range", w.Put(ctx, []int64{-1}, n, 0)},
		{"accumulate with a user operation", w.Accumulate(ctx, []int64{-1}, target, 0, commtune.NewOp("first", func(a, b int64) int64 { return a }, true))},
		{"fetch-and-op past the end", func() error { _, err := w.FetchAndOp(ctx, -1, target, 4, commtune.Sum); return err }()},
		{"accumulate with the zero Op", w.Accumulate(ctx, []int64{-1}, target, 0, commtune.Op{})},
		{"post to a nil group", w.Post(ctx, nil)},
		{"start inside a passive-target epoch", w.Start(ctx, commtune.GroupEmpty)},
	} {
		if bad.err == nil {
			return fmt.Errorf("%s: no error", bad.what)
		}
	}
	if err := w.Unlock(ctx, target); err != nil {
		return err
	}
	if err := w.Comm().Barrier(ctx); err != nil {
		return err
	}
	w.Sync()
	for i, v := range w.Local() {
		if v != 0 {
			return fmt.Errorf("cell %d = %d: a refused call wrote", i, v)
		}
	}
	return nil
}

// rmaRequests: request-based operations complete through the calls over
// sets of requests, beside a point-to-point request: Rget of every
// neighbour's row and Raccumulate into them, under LockAll.
func rmaRequests(ctx context.Context, c *commtune.Comm) error {
	n, me := c.Size(), c.Rank()
	const cells = 32
	return forEachWindow(ctx, c, cells+1, func(w *commtune.Window[int64]) error {
		for i := range cells {
			w.Local()[i] = cellValue(me, me, i)
		}
		w.Sync() // before the others' Gets, through this rank's agent
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if err := w.LockAll(ctx); err != nil {
			return err
		}
		rows := make([][]int64, n)
		var reqs []commtune.Pending
		for t := range n {
			rows[t] = make([]int64, cells)
			q, err := w.Rget(rows[t], t, 0)
			if err != nil {
				return err
			}
			reqs = append(reqs, q)
			a, err := w.Raccumulate([]int64{int64(me + 1)}, t, cells, commtune.Sum)
			if err != nil {
				return err
			}
			reqs = append(reqs, a)
		}
		self, err := c.Isend(nil, me, 77)
		if err != nil {
			return err
		}
		reqs = append(reqs, self, nil)
		if _, err := c.Recv(ctx, nil, me, 77); err != nil {
			return err
		}
		if _, err := commtune.WaitAll(ctx, reqs...); err != nil {
			return err
		}
		if ok, _, err := commtune.TestAll(reqs...); !ok || err != nil {
			return fmt.Errorf("TestAll after WaitAll: %v %v", ok, err)
		}
		if err := w.UnlockAll(ctx); err != nil {
			return err
		}
		for t, row := range rows {
			for i, v := range row {
				if v != cellValue(t, t, i) {
					return fmt.Errorf("Rget of rank %d, cell %d = %d, want %d", t, i, v, cellValue(t, t, i))
				}
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		w.Sync() // what other ranks did through this rank's agent
		if got, want := w.Local()[cells], int64(n*(n+1)/2); got != want {
			return fmt.Errorf("Raccumulate total %d, want %d", got, want)
		}
		return c.Barrier(ctx)
	})
}
