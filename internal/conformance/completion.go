package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/commtune/commtune"
)

// completionSets: completion calls over mixed sets of requests between
// ranks. Every rank posts a receive from every other; until a barrier
// nobody sends, so TestAll, TestAny and TestSome report nothing complete
// and WaitSome and WaitAny give up with their contexts. Then every rank
// sends to every other (synchronous sends for odd pairs), starts an
// Iallreduce and a ring exchange, and drains the set — receives, sends,
// nil entries, the collective and the exchange — with WaitSome: each
// request is reported exactly once, with its status; then again with
// WaitAny over messages eager and rendezvous, one of which each rank
// receives into a buffer one byte short: exactly that one fails, with
// ErrTruncate, and WaitAll and TestAll report it joined.
func completionSets(ctx context.Context, world *commtune.Comm) error {
	c, err := world.Dup()
	if err != nil {
		return err
	}
	defer c.Close()
	n, me := c.Size(), c.Rank()
	next, prev := (me+1)%n, (me-1+n)%n
	ring, err := c.Neighborhood([]int{prev, next}, []int{prev, next})
	if err != nil {
		return err
	}
	size := func(round, src, dst int) int {
		s := 1 + 37*src + 11*dst + round
		if round == 2 && (src+dst)%2 == 0 {
			s += 200 << 10 // rendezvous
		}
		return s
	}
	seed := func(round, src, dst int) uint32 { return uint32(round*1_000_003 + src*1009 + dst + 1) }

	for round := 1; round <= 2; round++ {
		// Receives first, one per peer, at index src; the own index nil.
		var reqs []commtune.Pending
		bufs := make([][]byte, n)
		short := -1 // the peer whose message this rank receives one byte short
		if round == 2 {
			short = prev
		}
		for src := 0; src < n; src++ {
			if src == me {
				reqs = append(reqs, nil)
				continue
			}
			room := size(round, src, me)
			if src == short {
				room--
			}
			bufs[src] = make([]byte, room)
			q, err := c.Irecv(bufs[src], src, round)
			if err != nil {
				return err
			}
			reqs = append(reqs, q)
		}
		if round == 1 {
			if err := nothingComplete(ctx, reqs); err != nil {
				return err
			}
		}
		if err := world.Barrier(ctx); err != nil {
			return err
		}
		// Sends, a collective and an exchange join the set.
		for dst := 0; dst < n; dst++ {
			if dst == me {
				reqs = append(reqs, (*commtune.Request)(nil))
				continue
			}
			msg := pattern(make([]byte, size(round, me, dst)), seed(round, me, dst))
			send := c.Isend
			if (me+dst)%2 == 1 {
				send = c.Issend
			}
			q, err := send(msg, dst, round)
			if err != nil {
				return err
			}
			reqs = append(reqs, q)
		}
		sum := []int64{0}
		cq, err := commtune.Iallreduce(ctx, c, []int64{int64(me+1) * int64(round)}, sum, commtune.Sum)
		if err != nil {
			return err
		}
		got := []int64{-1, -1}
		nq, err := commtune.IneighborAlltoall(ring, []int64{int64(1000*round + 10*me), int64(1000*round + 10*me + 1)}, got)
		if err != nil {
			return err
		}
		reqs = append(reqs, cq, nq)
		live := 2*(n-1) + 2

		seen := make([]bool, len(reqs))
		var failed []int
		record := func(i int, st commtune.Status, err error) error {
			if i < 0 || i >= len(reqs) || seen[i] {
				return fmt.Errorf("round %d: request %d reported again, or unknown", round, i)
			}
			seen[i] = true
			if err != nil {
				if !errors.Is(err, commtune.ErrTruncate) {
					return fmt.Errorf("round %d: request %d: %w", round, i, err)
				}
				failed = append(failed, i)
			}
			if i < n { // a receive from rank i
				if st.Source != i || st.Tag != round || st.Count != len(bufs[i]) {
					return fmt.Errorf("round %d: receive from %d: status %+v, want %d bytes", round, i, st, len(bufs[i]))
				}
			} else if i >= 2*n && st != (commtune.Status{}) {
				return fmt.Errorf("round %d: collective request %d has status %+v", round, i, st)
			}
			reqs[i] = nil
			return nil
		}
		all := slices.Clone(reqs)
		count := 0
		for count < live {
			if round == 1 {
				idx, sts, err := commtune.WaitSome(ctx, reqs...)
				if idx == nil {
					return fmt.Errorf("round 1: WaitSome found no request with %d of %d left", live-count, live)
				}
				if err != nil {
					return fmt.Errorf("round 1: WaitSome: %w", err)
				}
				for j, i := range idx {
					if err := record(i, sts[j], nil); err != nil {
						return err
					}
				}
				count += len(idx)
			} else {
				i, st, err := commtune.WaitAny(ctx, reqs...)
				if i < 0 {
					return fmt.Errorf("round 2: WaitAny found no request with %d of %d left (%v)", live-count, live, err)
				}
				if err := record(i, st, err); err != nil {
					return err
				}
				count++
			}
		}
		if i, _, ok, err := commtune.TestAny(reqs...); i != -1 || !ok || err != nil {
			return fmt.Errorf("round %d: TestAny over the drained set: %d %v %v", round, i, ok, err)
		}
		if idx, _, err := commtune.WaitSome(ctx, reqs...); idx != nil || err != nil {
			return fmt.Errorf("round %d: WaitSome over the drained set: %v %v", round, idx, err)
		}
		// What arrived.
		if want := int64(n*(n+1)/2) * int64(round); sum[0] != want {
			return fmt.Errorf("round %d: Iallreduce gave %d, want %d", round, sum[0], want)
		}
		if want := ringExpect(n, me, round); !slices.Equal(got, want) {
			return fmt.Errorf("round %d: ring exchange gave %v from %d and %d, want %v", round, got, prev, next, want)
		}
		for src := 0; src < n; src++ {
			if src == me {
				continue
			}
			if err := checkPattern(bufs[src], seed(round, src, me)); err != nil && src != short {
				return fmt.Errorf("round %d: from %d: %w", round, src, err)
			} else if src == short {
				want := pattern(make([]byte, size(round, src, me)), seed(round, src, me))
				if !slices.Equal(bufs[src], want[:len(bufs[src])]) {
					return fmt.Errorf("round %d: the truncated message from %d does not hold its first bytes", round, src)
				}
			}
		}
		// The truncation, and nothing else, failed; WaitAll and TestAll
		// over the whole set report it again, joined.
		wantFailed := []int(nil)
		if short >= 0 && short != me {
			wantFailed = []int{short}
		}
		if !slices.Equal(failed, wantFailed) {
			return fmt.Errorf("round %d: requests %v failed, want %v", round, failed, wantFailed)
		}
		sts, err := commtune.WaitAll(ctx, all...)
		if (err != nil) != (wantFailed != nil) || err != nil && !errors.Is(err, commtune.ErrTruncate) {
			return fmt.Errorf("round %d: WaitAll over the completed set: %v", round, err)
		}
		ok, sts2, err2 := commtune.TestAll(all...)
		if !ok || !slices.Equal(sts, sts2) || (err2 == nil) != (err == nil) {
			return fmt.Errorf("round %d: TestAll over the completed set: %v %v", round, ok, err2)
		}
		if sts[me] != (commtune.Status{}) || sts[n+me] != (commtune.Status{}) {
			return fmt.Errorf("round %d: null entries have statuses %+v %+v", round, sts[me], sts[n+me])
		}
	}
	return nil
}

// nothingComplete checks the calls over reqs while none can complete:
// the receives' senders wait at a barrier.
func nothingComplete(ctx context.Context, reqs []commtune.Pending) error {
	if ok, sts, err := commtune.TestAll(reqs...); ok || sts != nil || err != nil {
		return fmt.Errorf("TestAll before any send: %v %v %v", ok, sts, err)
	}
	if i, _, ok, err := commtune.TestAny(reqs...); i != -1 || ok || err != nil {
		return fmt.Errorf("TestAny before any send: %d %v %v", i, ok, err)
	}
	if idx, _, err := commtune.TestSome(reqs...); idx == nil || len(idx) != 0 || err != nil {
		return fmt.Errorf("TestSome before any send: %v (nil %v) %v", idx, idx == nil, err)
	}
	short, stop := context.WithTimeout(ctx, 20*time.Millisecond)
	defer stop()
	if idx, _, err := commtune.WaitSome(short, reqs...); idx != nil || !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("WaitSome before any send: %v %v", idx, err)
	}
	if i, _, err := commtune.WaitAny(short, reqs...); i != -1 || !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("WaitAny before any send: %d %v", i, err)
	}
	if _, err := commtune.WaitAll(short, reqs...); !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("WaitAll before any send: %v", err)
	}
	return nil
}

// ringExpect is what rank me receives in completionSets' ring exchange,
// where rank s sends 1000*round+10*s+j to its j-th destination (s−1,
// then s+1): its source slot i takes the k-th block sent to it by that
// source, k counting the earlier slots naming the same rank (with two
// ranks, both slots name the other).
func ringExpect(n, me, round int) []int64 {
	ring := func(r int) []int { return []int{(r - 1 + n) % n, (r + 1) % n} }
	var out []int64
	sources := ring(me)
	for i, s := range sources {
		k := 0
		for _, t := range sources[:i] {
			if t == s {
				k++
			}
		}
		for j, d := range ring(s) {
			if d != me {
				continue
			}
			if k == 0 {
				out = append(out, int64(1000*round+10*s+j))
				break
			}
			k--
		}
	}
	return out
}
