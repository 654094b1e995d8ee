package halo

import (
	"context"
	"fmt"

	"github.com/commtune/commtune/internal/core"
)

// Exec carries out one rank's plan of one implementation, exchange after
// exchange, over a Channel to its communicator.
//
// Every wait of an exchange goes through the Channel (Await, Probe), which
// watches the exchange as a call of the communicator: a rank that leaves
// it (a lost neighbour, a message of the wrong size, its context's end)
// tells every rank why, and ranks that disagree on the exchange find out
// within a watch or two, instead of waiting forever on a neighbour that
// has gone.
type Exec struct {
	impl    Impl
	ch      Channel
	data    []byte          // the user's array
	phases  [][]xfer        // each in the order this rank carries it out
	pending []*core.Request // requests in flight, withdrawn if the exchange fails
	sts     []core.Status   // the statuses of pending once awaited
	recvs   []*xfer         // aao: the transfer of each receive Start left in pending

	connected bool   // Get: the neighbours know where the send boxes lie
	reads     []read // Get, aao: the reads Start left for Wait
	sent      int    // bytes an exchange sends to other ranks
}

// SentBytes is what one exchange sends to other ranks: the boxes of its
// transfers with them (a periodic wrap onto this rank copies in place).
func (x *Exec) SentBytes() int { return x.sent }

// xfer is one transfer of the plan with its runs and buffers.
type xfer struct {
	peer, sendTag, recvTag int
	sendRuns, recvRuns     []Run
	sendBuf, recvBuf       []byte   // pack: the packed boxes
	sendSegs, recvSegs     [][]byte // ddt: the boxes' runs in the array
	// local is, for a transfer with this rank itself, the index in its
	// phase of the transfer whose Recv box takes this one's Send box (the
	// one in the opposite direction); -1 for a transfer with another rank.
	local int
	// sendFirst orders a SendRecv transfer: see pairOrder.
	sendFirst bool
	rma       rmaState // Put and Get
}

// Slab lends pack buffers to the Execs of one array, which exchange one
// at a time: a selection that tries several implementations then gives
// memory (and, on a virtual machine, tens of µs of first touch a page)
// once, not once per implementation. The zero value is empty.
type Slab struct{ b []byte }

// take returns n bytes of the slab, grown if it holds fewer: memory an
// earlier Exec may use too, never at the same time.
func (s *Slab) take(n int) []byte {
	if len(s.b) < n {
		s.b = make([]byte, n)
	}
	return s.b[:n:n]
}

// NewExec prepares plan, this rank's plan of implementation m on the
// grid g, on data, the rank's array of shape s: the runs of every box and
// a buffer for each, and for pair implementations the order of every
// phase. Its exchanges travel over ch. A two-sided packed Exec takes its
// buffers from slab, if not nil: the caller runs no two Execs sharing one
// at a time. One-sided ones expose their buffers to the peers and keep
// their own.
func NewExec(m Impl, ch Channel, g Grid, s Shape, data []byte, plan Plan, slab *Slab) (*Exec, error) {
	if m.Partners == AllAtOnce && len(plan.Phases) != 1 {
		return nil, fmt.Errorf("all-at-once plan has %d phases, want 1", len(plan.Phases))
	}
	me := ch.Rank()
	x := &Exec{impl: m, ch: ch, data: data, phases: make([][]xfer, len(plan.Phases))}
	for p, ph := range plan.Phases {
		ts := make([]xfer, len(ph.Transfers))
		for i, tr := range ph.Transfers {
			t := xfer{peer: tr.Peer, sendTag: tr.SendTag, recvTag: tr.RecvTag, local: -1}
			var err error
			if t.sendRuns, err = Runs(s, tr.Send); err != nil {
				return nil, err
			}
			if t.recvRuns, err = Runs(s, tr.Recv); err != nil {
				return nil, err
			}
			ts[i] = t
		}
		for i := range ts {
			if ts[i].peer != me {
				continue
			}
			// The box this rank sends itself under a tag lands where it
			// receives from itself under that tag: the opposite direction,
			// which a periodic wrap onto this rank also has.
			for j := range ts {
				if ts[j].peer == me && ts[j].recvTag == ts[i].sendTag {
					ts[i].local = j
				}
			}
			if ts[i].local < 0 {
				return nil, fmt.Errorf("transfer with itself under tag %d has no opposite transfer", ts[i].sendTag)
			}
		}
		x.phases[p] = ts
		for i := range ts {
			if ts[i].local < 0 {
				x.sent += RunsBytes(ts[i].sendRuns)
			}
		}
	}
	if m.Data == InPlace {
		for _, ts := range x.phases {
			for i := range ts {
				t := &ts[i]
				var err error
				if t.sendSegs, err = Segments(data, t.sendRuns); err != nil {
					return nil, err
				}
				if t.recvSegs, err = Segments(data, t.recvRuns); err != nil {
					return nil, err
				}
			}
		}
		return x, x.finish(g)
	}
	// One allocation for every buffer, reused by every exchange; a local
	// copy is unpacked from its send buffer and needs no receive buffer.
	sizes := func(t *xfer) (send, recv int) {
		if send = RunsBytes(t.sendRuns); t.local < 0 {
			recv = RunsBytes(t.recvRuns)
		}
		return send, recv
	}
	total := 0
	for _, ts := range x.phases {
		for i := range ts {
			send, recv := sizes(&ts[i])
			total += send + recv
		}
	}
	var buf []byte
	if slab != nil && !m.OneSided() {
		buf = slab.take(total)
	} else {
		buf = make([]byte, total)
	}
	for _, ts := range x.phases {
		for i := range ts {
			t := &ts[i]
			send, recv := sizes(t)
			t.sendBuf, buf = buf[:send:send], buf[send:]
			t.recvBuf, buf = buf[:recv:recv], buf[recv:]
		}
	}
	return x, x.finish(g)
}

// finish orders the phases of a pair plan and gives one-sided transfers
// their memory lists.
func (x *Exec) finish(g Grid) error {
	if x.impl.OneSided() {
		x.prepareRMA()
	}
	return x.order(g)
}

// order puts the transfers of each phase of a pair plan in the order
// pairOrder proves free of deadlock.
func (x *Exec) order(g Grid) error {
	if x.impl.Partners == Pairwise {
		for d, ts := range x.phases {
			plus := make([]int, len(x.phases))
			plus[d] = 1
			plusTag, err := DirectionIndex(plus)
			if err != nil {
				return err
			}
			if err := pairOrder(ts, d, g.Coords[d], g.Dims[d], g.Periods[d], plusTag); err != nil {
				return err
			}
		}
	}
	return nil
}

// pairOrder puts the transfers of phase d of a pair plan, towards −e_d and
// +e_d, in the order this rank carries them out, and orders the send and
// the receive of each for SendRecv. coord is this rank's coordinate along
// d, n the extent of the grid there, and plusTag the tag of messages sent
// towards +e_d.
//
// Why no rank waits forever, for every n and periodicity. Along d the
// ranks of a line of the grid are joined by edges (c, c+1), plus the wrap
// edge (n−1, 0) if d is periodic; a transfer is one edge seen from one end:
// the rank at c does edge (c, c+1) as its +e_d transfer and (c−1, c) as
// its −e_d one. Every primitive completes an edge once both its ends have
// reached it, whatever happened to earlier edges: IsendIrecv and SendIrecv
// post the receive before anything blocks, Sendrecv does both at once, and
// in SendRecv the +e_d end sends first while the −e_d end receives first,
// so the first blocking call of each end matches the other's. (ADCL has an
// even coordinate send first instead, which on a periodic line of odd
// length puts two senders on the wrap edge (n−1, 0): a deadlock once sends
// wait for their receives, as rendezvous ones do.) Number the
// edges: key 0 for (c, c+1) with c odd, 1 with c even, and 2 for the wrap
// edge when n is odd (for n even the wrap edge (n−1, 0) has n−1 odd, key
// 0). The two edges of a rank have distinct keys, and the rule below has
// every rank take them in increasing key: ADCL's parity order (an even
// coordinate does −e_d first, an odd one +e_d first), except that on a
// periodic dimension of odd extent coordinate 0 does +e_d first, because
// its −e_d edge is the wrap edge, whose other end n−1 is also even and
// takes it last. Then, with phases and exchanges taken in order, every
// rank meets its edges in increasing (exchange, phase, key). Were some
// rank stuck, take the uncompleted edge of least such key: both its ends
// have completed every edge below it, so both reach it, and it completes.
//
// The exceptions fit the same argument. On a periodic dimension of extent
// 2 both transfers go to the other rank, as two edges of keys 0 and 1,
// kept apart by their tags (the direction each message travels); one of
// extent 1 leaves only transfers with this rank, done as local copies.
// The edges that are not there past an open border are skipped.
func pairOrder(ts []xfer, d, coord, n int, periodic bool, plusTag int) error {
	if len(ts) > 2 {
		return fmt.Errorf("pair phase %d has %d transfers, want at most 2", d, len(ts))
	}
	minusFirst := coord%2 == 0
	if periodic && n%2 == 1 && n > 1 && coord == 0 {
		minusFirst = false
	}
	for i := range ts {
		ts[i].sendFirst = ts[i].sendTag == plusTag
	}
	if len(ts) == 2 && ts[0].sendFirst == minusFirst {
		ts[0], ts[1] = ts[1], ts[0]
	}
	return nil
}

// Start begins an exchange. All at once, it packs every box and posts
// every receive before any send, so no send waits for a receive its peer
// has yet to post behind a blocking call; the messages are left in flight
// for wait. In pairs each phase sends what the one before received, so the
// whole exchange happens here.
func (x *Exec) Start(ctx context.Context) error {
	if x.impl.OneSided() {
		return x.startRMA(ctx)
	}
	if x.impl.Partners == Pairwise {
		return x.pairs(ctx, x.transfer)
	}
	ts := x.phases[0]
	if err := x.pack(ts); err != nil {
		return err
	}
	x.recvs = x.recvs[:0]
	for i := range ts {
		if t := &ts[i]; t.local < 0 {
			r, err := x.irecv(t)
			if err != nil {
				return err
			}
			x.pending = append(x.pending, r)
			x.recvs = append(x.recvs, t)
		}
	}
	for i := range ts {
		t := &ts[i]
		if t.local >= 0 {
			continue
		}
		if x.impl.Primitive == SendIrecv {
			if err := x.send(ctx, t); err != nil {
				return sendErr(t, err)
			}
			continue
		}
		r, err := x.isend(t)
		if err != nil {
			return err
		}
		x.pending = append(x.pending, r)
	}
	return nil
}

// pairs carries out a pair exchange: phase by phase, it packs the
// phase's boxes (and copies those this rank sends itself), then does each
// transfer with another rank in order with do.
func (x *Exec) pairs(ctx context.Context, do func(context.Context, *xfer) error) error {
	for _, ts := range x.phases {
		if err := x.pack(ts); err != nil {
			return err
		}
		for i := range ts {
			if ts[i].local < 0 {
				if err := do(ctx, &ts[i]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// The point-to-point calls of a transfer: the packed buffers, or the
// boxes' runs in place. The blocking ones are the nonblocking ones awaited
// at once, watching the exchange.

func (x *Exec) isend(t *xfer) (*core.Request, error) {
	return x.isendTo(t.peer, t.sendTag, t.sendSegs, t.sendBuf)
}

func (x *Exec) irecv(t *xfer) (*core.Request, error) {
	return x.irecvFrom(t.peer, t.recvTag, t.recvSegs, t.recvBuf)
}

// isendTo sends segs in place, for a ddt implementation, else buf.
func (x *Exec) isendTo(peer, tag int, segs [][]byte, buf []byte) (*core.Request, error) {
	if x.impl.Data != InPlace {
		segs = nil
	}
	return x.ch.Isend(peer, tag, segs, buf)
}

// irecvFrom receives into segs in place, for a ddt implementation, else
// into buf.
func (x *Exec) irecvFrom(peer, tag int, segs [][]byte, buf []byte) (*core.Request, error) {
	if x.impl.Data != InPlace {
		segs = nil
	}
	return x.ch.Irecv(peer, tag, segs, buf)
}

func (x *Exec) send(ctx context.Context, t *xfer) error {
	r, err := x.isend(t)
	if err != nil {
		return err
	}
	_, err = x.await(ctx, r)
	return err
}

func (x *Exec) recv(ctx context.Context, t *xfer) (core.Status, error) {
	r, err := x.irecv(t)
	if err != nil {
		return core.Status{}, err
	}
	return x.await(ctx, r)
}

// sendrecv exchanges with t's peer at once, as Comm.Sendrecv does: the
// receive posted first, then the send, then both awaited (the boxes and
// buffers of a transfer never overlap).
func (x *Exec) sendrecv(ctx context.Context, t *xfer) (core.Status, error) {
	rr, err := x.irecv(t)
	if err != nil {
		return core.Status{}, err
	}
	x.pending = append(x.pending[:0], rr)
	sr, err := x.isend(t)
	if err != nil {
		return core.Status{}, err
	}
	x.pending = append(x.pending, sr)
	sts, err := x.awaitPending(ctx)
	if err != nil {
		return core.Status{}, err
	}
	return sts[0], nil
}

// await waits for r, watching the exchange: a peer that leaves it or
// disagrees on it, or a failed request in pending, ends the wait, r then
// withdrawn if it still can be.
func (x *Exec) await(ctx context.Context, r *core.Request) (core.Status, error) {
	return x.ch.Await(ctx, r, x.pending)
}

// awaitPending waits for every request in pending, in order, and empties
// it; on the first failure it returns, leaving the rest in pending for
// abort to withdraw.
func (x *Exec) awaitPending(ctx context.Context) ([]core.Status, error) {
	x.sts = x.sts[:0]
	for i, r := range x.pending {
		st, err := x.ch.Await(ctx, r, x.pending[i+1:])
		if err != nil {
			x.pending = x.pending[i:]
			return x.sts, err
		}
		x.sts = append(x.sts, st)
	}
	clear(x.pending)
	x.pending = x.pending[:0]
	return x.sts, nil
}

// Wait completes what Start left in flight: the receives (first in
// pending) and sends of an all-at-once exchange, then unpacks.
func (x *Exec) Wait(ctx context.Context) error {
	if x.impl.Partners == Pairwise {
		return nil
	}
	if x.impl.OneSided() {
		return x.waitRMA(ctx)
	}
	return x.finishRecvs(ctx)
}

// transfer carries out one transfer of a pair exchange with another rank,
// with the implementation's primitive, and unpacks what it received.
func (x *Exec) transfer(ctx context.Context, t *xfer) error {
	var st core.Status
	switch x.impl.Primitive {
	case IsendIrecv, SendIrecv:
		rr, err := x.irecv(t)
		if err != nil {
			return err
		}
		x.pending = append(x.pending[:0], rr)
		if x.impl.Primitive == SendIrecv {
			if err := x.send(ctx, t); err != nil {
				return sendErr(t, err)
			}
		} else {
			sr, err := x.isend(t)
			if err != nil {
				return err
			}
			x.pending = append(x.pending, sr)
		}
		sts, err := x.awaitPending(ctx)
		if err != nil {
			return fmt.Errorf("commtune: halo exchange with rank %d: %w", t.peer, err)
		}
		st = sts[0]
	case SendRecv:
		// pairOrder's argument: the +e_d end sends first, the −e_d end
		// receives first, so the two ends' first blocking calls match.
		var err error
		if t.sendFirst {
			if err = x.send(ctx, t); err != nil {
				return sendErr(t, err)
			}
		}
		if st, err = x.recv(ctx, t); err != nil {
			return recvErr(t, err)
		}
		if !t.sendFirst {
			if err = x.send(ctx, t); err != nil {
				return sendErr(t, err)
			}
		}
	case Sendrecv:
		var err error
		if st, err = x.sendrecv(ctx, t); err != nil {
			return fmt.Errorf("commtune: halo exchange with rank %d: %w", t.peer, err)
		}
	default:
		return fmt.Errorf("commtune: halo: primitive %q has no executor", x.impl.Primitive)
	}
	return x.received(t, st)
}

// pack packs every send box of a phase into its buffer, then copies the
// boxes this rank sends itself to where they land. A phase's receive boxes
// overlap none of its send boxes, so the copies change nothing another
// transfer of the phase reads.
func (x *Exec) pack(ts []xfer) error {
	if x.impl.Data == InPlace {
		for i := range ts {
			if j := ts[i].local; j >= 0 {
				CopySegments(ts[j].recvSegs, ts[i].sendSegs)
			}
		}
		return nil
	}
	for i := range ts {
		if _, err := Pack(ts[i].sendBuf, x.data, ts[i].sendRuns); err != nil {
			return err
		}
	}
	for i := range ts {
		if j := ts[i].local; j >= 0 {
			if _, err := Unpack(x.data, ts[i].sendBuf, ts[j].recvRuns); err != nil {
				return err
			}
		}
	}
	return nil
}

// received checks a completed receive of t and unpacks it into the array.
func (x *Exec) received(t *xfer, st core.Status) error {
	if want := RunsBytes(t.recvRuns); st.Count != want {
		return fmt.Errorf("commtune: halo: %w: rank %d sent %d bytes for a %d-byte box; do the ranks agree on extents, width, components and element type?",
			core.ErrSizeMismatch, t.peer, st.Count, want)
	}
	if x.impl.Data == InPlace {
		return nil // it landed in place
	}
	_, err := Unpack(x.data, t.recvBuf, t.recvRuns)
	return err
}

// Abort withdraws the requests of a failed exchange that have not started
// moving data. Those that have finish on their own: their buffers are the
// Halo's, which no later exchange reuses.
func (x *Exec) Abort() {
	for _, r := range x.pending {
		r.Cancel()
	}
	x.pending = nil
	x.reads = nil
}

func sendErr(t *xfer, err error) error {
	return fmt.Errorf("commtune: halo: send to rank %d: %w", t.peer, err)
}

func recvErr(t *xfer, err error) error {
	return fmt.Errorf("commtune: halo: receive from rank %d: %w", t.peer, err)
}

// finishRecvs waits for what is in flight and unpacks every receive of an
// all-at-once exchange.
func (x *Exec) finishRecvs(ctx context.Context) error {
	sts, err := x.awaitPending(ctx)
	if err != nil {
		return fmt.Errorf("commtune: halo exchange: %w", err)
	}
	for i, t := range x.recvs {
		if err := x.received(t, sts[i]); err != nil {
			return err
		}
	}
	return nil
}
