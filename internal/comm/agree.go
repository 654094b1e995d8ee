package comm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
)

// Recovery after a lost rank (the ULFM model): a uniform agreement that
// survives failures (Agree), and the communicator of the survivors
// (Shrink), both running on a context of their own that a revocation
// leaves alone; FailedRanks and AckFailed say which members are gone.
//
// The agreement is flooding uniform consensus over a perfect failure
// detector (Cachin, Guerraoui and Rodrigues, "Introduction to Reliable and
// Secure Distributed Programming", algorithm 5.3): in each of n rounds
// every member sends what it has gathered (the AND of the flags, the
// union of the failed sets) to every member it has not found lost, and
// waits for each of them either to answer or to be found lost. The
// engine's loss reports are that detector: a rank is reported lost only
// once its process (or goroutine rank) is gone, and every survivor hears
// of it. After n rounds every member that finishes holds the same value,
// since among n rounds one saw no member fail and after it all hold the
// same; members that fail never make two survivors differ. It costs n
// rounds of n-1 small messages per member: recovery, not a hot path.

// ftSalt separates a communicator's agreement traffic from its other
// contexts: a revocation leaves it alone.
const ftSalt = 0xF7A62EE

// shrinkSalt derives the contexts of Shrink's communicators.
const shrinkSalt = 0x5A21CC

// ftState is what the recovery calls keep on a communicator.
type ftState struct {
	acked      map[int]bool // world ranks whose loss this rank acknowledged
	agreements uint64       // agreements run so far: identical on the survivors, their tags
	shrinks    uint64       // communicators Shrink made so far
}

// FailedRanksError is the error of an agreement some of whose members
// had failed (commtune.FailedRanksError): errors.Is(err, core.ErrPeerLost)
// holds.
type FailedRanksError struct {
	Ranks []int // ranks of the communicator, ascending
}

func (e *FailedRanksError) Error() string {
	return fmt.Sprintf("commtune: ranks %v of the communicator failed", e.Ranks)
}

// Is makes errors.Is(err, core.ErrPeerLost) true.
func (e *FailedRanksError) Is(target error) bool { return target == core.ErrPeerLost }

// rankSet is a set of a communicator's ranks, a bit each.
type rankSet []uint64

func newRankSet(n int) rankSet    { return make(rankSet, (n+63)/64) }
func (s rankSet) add(r int)       { s[r/64] |= 1 << (r % 64) }
func (s rankSet) has(r int) bool  { return s[r/64]&(1<<(r%64)) != 0 }
func (s rankSet) union(o rankSet) { orWords(s, o) }
func orWords(dst, src []uint64) {
	for i := range dst {
		dst[i] |= src[i]
	}
}
func (s rankSet) clone() rankSet { return slices.Clone(s) }
func (s rankSet) empty() bool    { return !slices.ContainsFunc(s, func(w uint64) bool { return w != 0 }) }

// list returns the ranks in s, ascending.
func (s rankSet) list() []int {
	var out []int
	for i, w := range s {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			out = append(out, i*64+b)
			w &^= 1 << b
		}
	}
	return out
}

// lostSet returns the members this rank can no longer reach (crashed or
// closed); unacked leaves out those it acknowledged.
func (c *Comm) lostSet(unacked bool) rankSet {
	s := newRankSet(len(c.group))
	if c.ep.Eng.Losses() == 0 {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for r, w := range c.group {
		if c.ep.Eng.Lost(w) != nil && !(unacked && c.ft.acked[w]) {
			s.add(r)
		}
	}
	return s
}

// FailedRanks returns the members of c this rank knows are lost, crashed
// or closed, ascending (commtune.Comm.FailedRanks).
func (c *Comm) FailedRanks() ([]int, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	return c.lostSet(false).list(), nil
}

// AckFailed acknowledges the losses FailedRanks reports now and returns
// the members acknowledged so far (commtune.Comm.AckFailed).
func (c *Comm) AckFailed() ([]int, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	lost := c.lostSet(false)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ft.acked == nil {
		c.ft.acked = map[int]bool{}
	}
	for _, r := range lost.list() {
		c.ft.acked[c.group[r]] = true
	}
	var out []int
	for r, w := range c.group {
		if c.ft.acked[w] {
			out = append(out, r)
		}
	}
	return out, nil
}

// unacknowledged returns why an any-source receive on c fails: a member
// crashed and this rank has not acknowledged it (AckFailed), so the
// message the receive waits for may have been that member's.
func (c *Comm) unacknowledged() error {
	if c.ep.Eng.Losses() == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.group {
		if err := c.ep.Eng.Lost(w); err != nil && !errors.Is(err, driver.ErrPeerClosed) && !c.ft.acked[w] {
			return fmt.Errorf("commtune: any-source receive while a lost rank is not acknowledged (AckFailed): %w", err)
		}
	}
	return nil
}

// Agree returns the AND of flag over the members that take part, the
// same on every member that returns; if members had failed, as some
// member knew on entry and had not acknowledged, the error is a
// *FailedRanksError naming them, also the same everywhere
// (commtune.Comm.Agree).
func (c *Comm) Agree(ctx context.Context, flag uint64) (uint64, error) {
	if err := c.checkOpen(); err != nil {
		return 0, err
	}
	v, failed, err := c.agreement(ctx, flag, c.lostSet(true))
	if err != nil {
		return 0, err
	}
	if !failed.empty() {
		return v, &FailedRanksError{Ranks: failed.list()}
	}
	return v, nil
}

// Shrink returns the communicator of c's members that are alive, the same
// on each of them, in c's order (commtune.Comm.Shrink). It agrees on the
// lost members, builds the communicator of the others, and agrees again
// on it: if one of them was found lost meanwhile, it starts over without
// it.
func (c *Comm) Shrink(ctx context.Context) (*Comm, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	carried := newRankSet(len(c.group))
	for {
		known := c.lostSet(false)
		known.union(carried)
		_, lost, err := c.agreement(ctx, ^uint64(0), known)
		if err != nil {
			return nil, fmt.Errorf("commtune: Shrink: %w", err)
		}
		if lost.has(c.rank) {
			return nil, fmt.Errorf("commtune: Shrink: the other members found this rank lost")
		}
		var members []int
		me := 0
		for r, w := range c.group {
			if r == c.rank {
				me = len(members)
			}
			if !lost.has(r) {
				members = append(members, w)
			}
		}
		c.mu.Lock()
		c.ft.shrinks++
		seq := c.ft.shrinks
		c.mu.Unlock()
		nc := c.child(mix(c.ctx, shrinkSalt, seq, hashRanks(members)), members, me)
		_, gone, err := nc.agreement(ctx, ^uint64(0), nc.lostSet(false))
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("commtune: Shrink: %w", err)
		}
		if gone.empty() {
			return nc, nil
		}
		nc.Close()
		carried = lost
		for _, r := range gone.list() {
			carried.add(c.fromWorld(members[r]))
		}
	}
}

// agreement runs one uniform agreement on c (see the top of the file):
// it returns the AND of the flags and the union of the sets the members
// that took part brought.
func (c *Comm) agreement(ctx context.Context, flag uint64, set rankSet) (uint64, rankSet, error) {
	n := len(c.group)
	c.mu.Lock()
	c.ft.agreements++
	k := c.ft.agreements
	c.mu.Unlock()
	ctxID := mix(c.ctx, ftSalt)
	val, acc := flag, set.clone()
	gone := newRankSet(n) // members found lost: the rounds no longer wait for them
	type peerReq struct {
		rank       int
		recv, send *core.Request
		buf        []byte
	}
	reqs := make([]peerReq, 0, n-1)
	for round := 1; round <= n; round++ {
		tag := agreementTag(k, round, n)
		msg := encodeAgreement(val, acc)
		reqs = reqs[:0]
		for q, w := range c.group {
			if q == c.rank || gone.has(q) {
				continue
			}
			if c.ep.Eng.Lost(w) != nil {
				gone.add(q)
				continue
			}
			buf := make([]byte, len(msg))
			reqs = append(reqs, peerReq{rank: q, buf: buf, recv: c.ep.Eng.Irecv(ctxID, w, tag, buf)})
		}
		for i := range reqs {
			reqs[i].send = c.ep.Eng.Isend(ctxID, c.group[reqs[i].rank], tag, msg)
		}
		var failure error
		for i := range reqs {
			p := &reqs[i]
			if failure != nil {
				p.recv.Cancel()
				p.send.Cancel()
				continue
			}
			_, err := p.recv.Wait(ctx)
			switch {
			case err == nil:
				v, s, derr := decodeAgreement(p.buf, n)
				if derr != nil {
					failure = fmt.Errorf("rank %d: %w", p.rank, derr)
					continue
				}
				val &= v
				acc.union(s)
			case errors.Is(err, core.ErrPeerLost):
				gone.add(p.rank)
			default:
				failure = err
				p.recv.Cancel()
				p.send.Cancel()
			}
			if failure == nil {
				if _, err := p.send.Wait(ctx); err != nil && !errors.Is(err, core.ErrPeerLost) {
					failure = err
				}
			}
		}
		if failure != nil {
			return 0, nil, failure
		}
	}
	return val, acc, nil
}

// agreementTag is the tag of round of agreement k on a communicator of n
// members: distinct for 2^31/(n+1) agreements in a row.
func agreementTag(k uint64, round, n int) int {
	return int((k*uint64(n+1) + uint64(round)) % uint64(TagUB))
}

// encodeAgreement is what a member sends in a round: the AND so far, then
// the set's words, little-endian.
func encodeAgreement(v uint64, s rankSet) []byte {
	b := make([]byte, 8+8*len(s))
	binary.LittleEndian.PutUint64(b, v)
	for i, w := range s {
		binary.LittleEndian.PutUint64(b[8+8*i:], w)
	}
	return b
}

// decodeAgreement reads what encodeAgreement wrote for n members.
func decodeAgreement(b []byte, n int) (uint64, rankSet, error) {
	s := newRankSet(n)
	if len(b) != 8+8*len(s) {
		return 0, nil, fmt.Errorf("agreement message of %d bytes, want %d", len(b), 8+8*len(s))
	}
	for i := range s {
		s[i] = binary.LittleEndian.Uint64(b[8+8*i:])
	}
	if extra := n % 64; extra != 0 && s[len(s)-1]>>extra != 0 {
		return 0, nil, fmt.Errorf("agreement message names ranks beyond %d", n-1)
	}
	return binary.LittleEndian.Uint64(b), s, nil
}
