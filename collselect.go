package commtune

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/tune"
)

// Run-time selection of collective algorithms by the lottery scheduler
// (seed 001 §6), for blocking calls whose algorithm nobody forced:
//
//   - Calls are grouped by key (tune.Key: operation, ranks, size class,
//     commutativity, transports). Each key has a few candidates
//     (coll.Candidates), the fixed table's choice first.
//   - When a key's draw has run out, rank 0 draws a candidate and a TTL
//     and tells the others, who each send it, in the same exchange, the
//     time they spent in the last draw's calls. Every rank then runs the
//     drawn algorithm for TTL calls of that key, counting them alike.
//   - Rank 0 records, for the last draw, the slowest rank's mean time per
//     call: one figure for the whole group, with no extra message (the
//     root's own time alone would miss the ranks that finish last).
//
// The exchange runs on its own tag of the collective context, between
// rank 0 and each other rank, once per draw; blocking calls, which are
// made in the same order everywhere, are the only ones to use it.
// Nonblocking calls, and calls whose algorithm is forced, run the table's
// or the forced algorithm and neither draw nor record.
const tagCollSelect = 2

// Draw exchange messages, little-endian: a report [spent ns u64][calls
// u64] from each rank to rank 0, a choice [candidate u32][count u32][TTL
// u32] from rank 0 to each rank. count, the number of candidates rank 0
// drew among, lets a rank with another list fail instead of running
// something else.
const (
	reportSize = 16
	choiceSize = 12
	maxTTL     = 1 << 16
)

// collSelector is a communicator's selection state.
type collSelector struct {
	keys      map[tune.Key]*selection
	transport string // the transports the communicator's members reach each other by
	report    []byte
	choice    []byte
	reports   []byte     // rank 0: one report per rank
	recvs     []coll.Msg // reused message lists
	sends     []coll.Msg
}

// selection is one key's state on this rank.
type selection struct {
	key     tune.Key
	sigName string // the call signature's algorithm part: "allreduce/lottery"
	cands   []coll.Algorithm
	names   []string
	drawn   int           // index in cands of the current draw; -1 before the first
	left    int           // calls of the current draw still to run
	spent   time.Duration // this rank's time in the current draw's calls
	calls   int
}

// selection returns k's key state if the lottery chooses k's algorithm,
// else nil.
func (k *collCall) selection() *selection {
	c := k.x.c
	if !k.auto || !k.blocking || c.ep.lottery == nil || len(c.group) < 2 {
		return nil
	}
	sl := c.selector()
	key := tune.Key{
		Op: string(k.op), Ranks: len(c.group), SizeClass: tune.SizeClass(k.layout.Bytes),
		Commutative: k.commutative && reduces(k.op), Transports: sl.transport,
	}
	s := sl.keys[key]
	if s == nil {
		cands := coll.Candidates(k.op, len(c.group), k.layout.Bytes, k.commutative)
		if len(cands) < 2 {
			return nil
		}
		s = &selection{key: key, sigName: string(k.op) + "/lottery", cands: cands, drawn: -1}
		for _, a := range cands {
			s.names = append(s.names, a.Name())
		}
		sl.keys[key] = s
	}
	return s
}

func reduces(op coll.Operation) bool { return op == coll.OpReduce || op == coll.OpAllreduce }

// selector returns c's selection state, made on first use. Blocking
// collective calls on a communicator are made one at a time, so the
// state needs no lock of its own.
func (c *Comm) selector() *collSelector {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sel == nil {
		c.sel = &collSelector{keys: map[tune.Key]*selection{}, transport: c.transportMix()}
	}
	return c.sel
}

// transportMix names how c's members reach each other, as rank 0 sees it:
// "inproc" for goroutine ranks, "shm" when all are on its node, "tcp"
// when none is, "shm+tcp" otherwise. Only rank 0 draws and records, so
// its view is the key's.
func (c *Comm) transportMix() string {
	if len(c.ep.transports) == 0 || c.ep.Transport(c.group[1]) == "inproc" {
		return "inproc"
	}
	shm, tcp := false, false
	for _, w := range c.group[1:] {
		if c.ep.isShmPeer(w) {
			shm = true
		} else {
			tcp = true
		}
	}
	switch {
	case shm && tcp:
		return "shm+tcp"
	case shm:
		return "shm"
	}
	return "tcp"
}

// choose sets k's algorithm for this call: the current draw's while it
// lasts, else a new draw agreed with rank 0.
func (k *collCall) choose(ctx context.Context, s *selection) error {
	if s.left == 0 {
		if err := k.draw(ctx, s); err != nil {
			return err
		}
	}
	s.left--
	c := k.x.c
	alg := s.cands[s.drawn]
	p, err := c.plan(k.op, alg, k.layout, k.commutative)
	if err != nil {
		return err
	}
	k.alg, k.plan, k.sched = alg, p, &p.sched
	return nil
}

// draw runs the draw exchange (see tagCollSelect) and starts a new draw.
func (k *collCall) draw(ctx context.Context, s *selection) error {
	c := k.x.c
	sl := c.sel
	n := len(c.group)
	if sl.report == nil {
		sl.report, sl.choice = make([]byte, reportSize), make([]byte, choiceSize)
		if c.rank == 0 {
			sl.reports = make([]byte, reportSize*n)
		}
	}
	x := k.x // the call's exchanger, on the selection tag
	x.tag = tagCollSelect
	defer func() { k.x.reqs, k.x.runner = x.reqs, x.runner }()
	recvs, sends := sl.recvs[:0], sl.sends[:0]
	idx, ttl := 0, 0
	if c.rank == 0 {
		for r := 1; r < n; r++ {
			recvs = append(recvs, coll.Msg{Peer: r, Buf: sl.reports[reportSize*r : reportSize*(r+1)]})
		}
		if err := x.Exchange(ctx, recvs, nil); err != nil {
			return err
		}
		if s.drawn >= 0 && s.calls > 0 {
			worst, ok := s.spent/time.Duration(s.calls), true
			for r := 1; r < n; r++ {
				b := sl.reports[reportSize*r:]
				spent, calls := time.Duration(binary.LittleEndian.Uint64(b)), int(binary.LittleEndian.Uint64(b[8:]))
				if calls != s.calls {
					ok = false // a failed call on some rank: no figure for the whole group
					break
				}
				worst = max(worst, spent/time.Duration(calls))
			}
			if ok {
				c.ep.lottery.Record(s.key, s.names[s.drawn], worst)
			}
		}
		ch := c.ep.lottery.Choose(s.key, s.names)
		for i, name := range s.names {
			if name == ch.Impl {
				idx = i
			}
		}
		ttl = min(max(ch.TTL, 1), maxTTL)
		binary.LittleEndian.PutUint32(sl.choice, uint32(idx))
		binary.LittleEndian.PutUint32(sl.choice[4:], uint32(len(s.cands)))
		binary.LittleEndian.PutUint32(sl.choice[8:], uint32(ttl))
		for r := 1; r < n; r++ {
			sends = append(sends, coll.Msg{Peer: r, Buf: sl.choice})
		}
		if err := x.Exchange(ctx, nil, sends); err != nil {
			return err
		}
	} else {
		binary.LittleEndian.PutUint64(sl.report, uint64(s.spent))
		binary.LittleEndian.PutUint64(sl.report[8:], uint64(s.calls))
		recvs = append(recvs, coll.Msg{Peer: 0, Buf: sl.choice})
		sends = append(sends, coll.Msg{Peer: 0, Buf: sl.report})
		if err := x.Exchange(ctx, recvs, sends); err != nil {
			return err
		}
		idx = int(binary.LittleEndian.Uint32(sl.choice))
		count := int(binary.LittleEndian.Uint32(sl.choice[4:]))
		ttl = int(binary.LittleEndian.Uint32(sl.choice[8:]))
		if count != len(s.cands) || idx >= count || ttl < 1 || ttl > maxTTL {
			return fmt.Errorf("%w: rank 0 chose candidate %d of %d for %d calls of %s, where this rank has %d candidates (do all ranks set %s alike?)",
				ErrSizeMismatch, idx, count, ttl, s.key, len(s.cands), EnvCollSelect)
		}
	}
	clear(recvs)
	clear(sends)
	sl.recvs, sl.sends = recvs[:0], sends[:0]
	s.drawn, s.left, s.spent, s.calls = idx, ttl, 0, 0
	return nil
}
