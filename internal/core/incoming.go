package core

import (
	"errors"
	"sync"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/sched"
)

// Packet handles a Packet frame's body from peer: a sequence of entries. It
// implements driver.Handler; a malformed entry is a protocol error (the
// rail then drops the peer).
func (e *Engine) Packet(peer int, body []byte) error {
	if peer < 0 || peer >= e.size {
		return driver.ProtocolError("packet from rank %d outside job of %d", peer, e.size)
	}
	var out outbox
	var en entry
	var err error
	e.mu.Lock()
	for len(body) > 0 && err == nil {
		body, err = nextEntry(body, &en)
		if err == nil {
			err = e.handleLocked(peer, &en, &out)
		}
	}
	e.mu.Unlock()
	out.flush(e)
	return err
}

func (e *Engine) handleLocked(peer int, en *entry, out *outbox) error {
	switch en.kind {
	case kindEager, kindRTS, kindRTSPull, kindPost:
		return e.sequencedLocked(peer, en, out)
	case kindRefuse:
		e.refusedLocked(peer, en)
	case kindFin:
		return e.finLocked(peer, en)
	case kindCTS:
		return e.ctsLocked(peer, en, out)
	case kindCredit:
		p := &e.peers[peer]
		p.credits += int64(en.size)
		if p.credits > e.grant {
			return driver.ProtocolError("rank %d returned more credit than granted", peer)
		}
	case kindCancel:
		e.cancelFromPeerLocked(peer, en.id, en.flags == flagRevoked)
	case kindWithdraw:
		e.withdrawLocked(peer, en, out)
	case kindWithdrawn:
		return e.withdrawnLocked(peer, en.id)
	case kindArrived:
		out.arrivals = append(out.arrivals, arrival{peer, en.region, en.size})
	case kindAbort:
		if e.onAbort != nil {
			e.onAbort(peer, int(int64(en.size)))
		}
	case kindRevoke:
		if e.markRevokedLocked(en.ctx) {
			out.revokes = append(out.revokes, en.ctx)
		}
	}
	return nil
}

// withdrawLocked answers peer's request to withdraw its pulled send
// en.id (RTS-pull en.seq in context en.ctx): withdrawn, unless the read
// of its buffer has begun — then the FIN (or the CTS of a failed read)
// already answers, and the send completes that way.
func (e *Engine) withdrawLocked(peer int, en *entry, out *outbox) {
	withdrawn := func() {
		c := newCtrl()
		putWithdrawn(c.buf[:], en.id)
		c.pkt.Head = c.buf[:withdrawnLen]
		out.add(peer, c)
	}
	if c := e.ctxs[en.ctx]; c != nil {
		if u, taken := c.findRTS(peer, en.id); u != nil {
			if taken {
				u.withdrawn = true // its Mrecv fails
			} else {
				c.removeUnexpected(u)
			}
			withdrawn()
			return
		}
	}
	for h, r := range e.regions {
		if r.src == peer && r.sendID == en.id {
			// Refused once the read has begun (stPulling).
			if r.step(evWithdraw, r.status, withdrawnErr(peer, en.flags == flagRevoked)) {
				delete(e.regions, h)
				withdrawn()
			}
			return
		}
	}
	// Not here: either not arrived yet (another rail, or held for its
	// turn) — then dropped when it comes — or received and finished.
	var recvSeq uint32
	if c := e.ctxs[en.ctx]; c != nil {
		recvSeq = c.recvSeq[peer]
	}
	if int32(en.seq-recvSeq) >= 0 {
		p := &e.peers[peer]
		if p.cancelled == nil {
			p.cancelled = make(map[uint64]struct{})
		}
		p.cancelled[en.id] = struct{}{}
		withdrawn()
	}
}

// withdrawnLocked completes a pulled send its receiver agreed not to read.
func (e *Engine) withdrawnLocked(peer int, id uint64) error {
	s := e.sends[id]
	if s == nil {
		return nil // its FIN came first: complete already
	}
	if s.peer != peer || !s.step(evWithdrawAck, Status{}, ErrCanceled) {
		return driver.ProtocolError("rank %d withdrew send %d, which was not being withdrawn from it", peer, id)
	}
	delete(e.sends, id)
	return nil
}

// sequencedLocked takes an eager or RTS entry: matched now if it is the
// next one expected from peer in its context, held until its turn if it
// came early (another rail overtook it).
func (e *Engine) sequencedLocked(peer int, en *entry, out *outbox) error {
	if e.closed != nil {
		return nil
	}
	if en.kind == kindEager && e.released.set != nil && e.released.has(en.ctx) {
		// For a communicator this rank closed: nobody will receive it.
		e.creditLocked(peer, len(en.payload), out)
		return nil
	}
	c := e.ctxLocked(en.ctx)
	want := c.recvSeq[peer]
	if en.seq != want {
		if int32(en.seq-want) < 0 {
			return driver.ProtocolError("rank %d sent sequence %d in context %#x, already past %d", peer, en.seq, en.ctx, want)
		}
		if len(c.held) >= e.heldLimit {
			return driver.ProtocolError("rank %d has %d messages out of order", peer, len(c.held))
		}
		if c.held == nil {
			c.held = make(map[heldKey]*unexpected)
		}
		key := heldKey{peer, en.seq}
		if c.held[key] != nil {
			return driver.ProtocolError("rank %d sent sequence %d twice", peer, en.seq)
		}
		c.held[key] = e.bufferLocked(peer, en)
		return nil
	}
	e.arriveLocked(c, peer, en, nil, out)
	c.recvSeq[peer]++
	for len(c.held) > 0 {
		key := heldKey{peer, c.recvSeq[peer]}
		u := c.held[key]
		if u == nil {
			break
		}
		delete(c.held, key)
		e.arriveLocked(c, peer, nil, u, out)
		c.recvSeq[peer]++
	}
	return nil
}

// unexpectedPool recycles unexpected records once consumed: in a
// collective, a peer's message often arrives before its receive is posted.
var unexpectedPool = sync.Pool{New: func() any { return new(unexpected) }}

// bufferLocked copies an entry into an unexpected record that owns its
// payload.
func (e *Engine) bufferLocked(peer int, en *entry) *unexpected {
	u := unexpectedPool.Get().(*unexpected)
	*u = unexpected{peer: peer, tag: int(en.tag), seq: en.seq}
	if en.kind == kindPost {
		u.post, u.size, u.region = true, int(en.size), en.region
		return u
	}
	if en.kind != kindEager {
		u.rts, u.size, u.sendID, u.pullAddr = true, int(en.size), en.id, en.addr
		u.report = en.flags&flagReport != 0
		return u
	}
	u.size = len(en.payload)
	u.data = getBuf(u.size)
	copy(*u.data, en.payload)
	e.stats.UnexpectedBytes += int64(u.size)
	e.stats.UnexpectedPeak = max(e.stats.UnexpectedPeak, e.stats.UnexpectedBytes)
	return u
}

// arriveLocked matches an in-order message, given either as a wire entry
// or as a held record, against the posted receives; unmatched, it joins the
// unexpected queue.
func (e *Engine) arriveLocked(c *matchCtx, peer int, en *entry, u *unexpected, out *outbox) {
	var tag int
	var rts, post bool
	var sendID, pullAddr uint64
	if en != nil {
		post = en.kind == kindPost
		tag, rts, sendID, pullAddr = int(en.tag), en.kind == kindRTS || en.kind == kindRTSPull, en.id, en.addr
	} else {
		tag, rts, post, sendID, pullAddr = u.tag, u.rts, u.post, u.sendID, u.pullAddr
	}
	if rts {
		if _, ok := e.peers[peer].cancelled[sendID]; ok {
			delete(e.peers[peer].cancelled, sendID)
			return // the sender withdrew it before it arrived
		}
	}
	r := c.matchPosted(peer, tag)
	switch {
	case r == nil:
		if u == nil {
			u = e.bufferLocked(peer, en)
		}
		c.pushUnexpected(u)
		if c.watched != nil && tag == c.watchTag {
			c.watched.Add(1)
			if c.watchNotify != nil {
				c.watchNotify()
			}
		}
		e.wakeProbesLocked()
	case (r.op == opPut) != post:
		// A put met a message, or a receive a post: not in a context
		// Engine.Expose and Engine.PutV keep to themselves.
		if u == nil {
			u = e.bufferLocked(peer, en)
		}
		e.mismatchLocked(r, u, out)
	case u != nil:
		e.consumeLocked(r, u, out)
	case post:
		e.acceptPostLocked(r, peer, int(en.size), en.region, out)
	case rts:
		e.acceptRTSLocked(r, peer, tag, int(en.size), sendID, pullAddr, en.flags&flagReport != 0, out)
	default:
		e.fillLocked(r, peer, tag, en.payload, out)
	}
}

// ctsLocked starts the data phase of a rendezvous send: the data goes as
// one Bulk packet the strategy may split over rails.
func (e *Engine) ctsLocked(peer int, en *entry, out *outbox) error {
	s := e.sends[en.id]
	if s == nil {
		return nil // withdrawn: the receiver learns it from our Cancel
	}
	if s.peer != peer {
		return driver.ProtocolError("rank %d answered rank %d's rendezvous %d", peer, s.peer, en.id)
	}
	if en.size > uint64(s.length()) {
		return driver.ProtocolError("rank %d accepts %d bytes of a %d-byte message", peer, en.size, s.length())
	}
	delete(e.sends, en.id)
	// s was in e.sends: announced (stRTS, stPullRTS, stWithdrawing), and
	// each of those takes either move.
	if en.size == 0 {
		s.step(evFinish, Status{Source: e.rank, Tag: s.tag}, nil)
		return nil
	}
	s.move(evBulkStart)
	s.moving.Store(true)
	s.bulk = sched.Packet{Kind: sched.Bulk, Method: s.bulkMethod, Region: en.region, Owner: s}
	if s.vec {
		// The segments themselves: the rails send each chunk from them.
		s.bulk.Vec = subSegs(s.segs, 0, int(en.size))
	} else {
		s.bulk.Body = s.buf[:en.size]
	}
	s.inflight++
	out.addPacket(peer, &s.bulk)
	return nil
}

// cancelFromPeerLocked withdraws peer's rendezvous send id wherever it is:
// unexpected (dropped), already matched (the receive fails), or not yet
// arrived (remembered).
// withdrawnErr is the error of a matched receive whose sender withdrew
// its send: ErrRevoked when the sender's communicator was revoked.
func withdrawnErr(peer int, revoked bool) error {
	if revoked {
		return ErrRevoked
	}
	return &WithdrawnError{Rank: peer}
}

func (e *Engine) cancelFromPeerLocked(peer int, id uint64, revoked bool) {
	for _, c := range e.ctxs {
		if u, taken := c.findRTS(peer, id); u != nil {
			if taken {
				u.withdrawn = true // its Mrecv fails
			} else {
				c.removeUnexpected(u)
			}
			return
		}
	}
	for h, r := range e.regions {
		if r.src == peer && r.sendID == id {
			if r.step(evPeerCancel, r.status, withdrawnErr(peer, revoked)) {
				delete(e.regions, h)
			}
			return
		}
	}
	p := &e.peers[peer]
	if p.cancelled == nil {
		p.cancelled = make(map[uint64]struct{})
	}
	p.cancelled[id] = struct{}{}
}

// Region returns the part of a matched receive buffer where n bytes of
// rendezvous data at offset land: the data goes straight into the user's
// buffer, with no intermediate copy. For a receive made of segments it is
// the part of the segment holding offset, up to n bytes: possibly fewer,
// the rail then asks again for the rest (driver.Handler).
func (e *Engine) Region(peer int, region uint64, offset int64, n int) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.regions[region]
	if r == nil || r.src != peer {
		return nil, driver.ProtocolError("rank %d puts into unknown region %d", peer, region)
	}
	if offset < 0 || n < 0 || offset > int64(r.expect) || int64(n) > int64(r.expect)-offset {
		return nil, driver.ProtocolError("rank %d puts [%d,+%d) into a %d-byte region", peer, offset, n, r.expect)
	}
	if r.state == stScrap {
		return make([]byte, n), nil // withdrawn: the bytes go nowhere
	}
	r.move(evLand) // an exposure is landing: no cancel now
	if r.vec {
		return r.cursor.piece(r.segs, int(offset), n), nil
	}
	return r.buf[offset : offset+int64(n)], nil
}

// PutDone counts landed rendezvous bytes and completes the receive when all
// have arrived.
func (e *Engine) PutDone(peer int, region uint64, offset int64, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.regions[region]
	if r == nil || r.src != peer {
		return
	}
	r.got += n
	if r.got < r.expect {
		return
	}
	delete(e.regions, region)
	if r.reportSince != 0 {
		// Queued before the receive completes, as a FIN is (pullDone):
		// a receiver that closes at once still sends it. Out of
		// e.regions, r is failed by nothing meanwhile.
		c := newCtrl()
		putArrived(c.buf[:], region, uint64(max(1, nanotime()-r.reportSince)))
		c.pkt.Head = c.buf[:arrivedLen]
		r.reportSince = 0
		e.mu.Unlock()
		e.sched.Submit(peer, &c.pkt)
		e.mu.Lock()
	}
	st := r.status
	st.Count = r.expect
	// A scrapped exposure was completed when it was withdrawn.
	r.step(evLanded, st, e.truncation(r.msgLen, r.length()))
}

// Lost returns why peer was lost, or nil while it is not.
func (e *Engine) Lost(peer int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if peer < 0 || peer >= e.size || e.peers[peer].lost == nil {
		return nil
	}
	return e.peers[peer].lost
}

// PeerLost fails everything that needs peer. After an orderly close
// (driver.ErrPeerClosed) only operations naming peer fail; after a crash,
// pending any-source receives and probes fail too, since the message they
// wait for may have been the lost rank's.
func (e *Engine) PeerLost(peer int, err error) {
	if peer < 0 || peer >= e.size {
		return
	}
	lost := &PeerLostError{Rank: peer, Err: err}
	graceful := errors.Is(err, driver.ErrPeerClosed)
	e.mu.Lock()
	if e.peers[peer].lost != nil {
		e.mu.Unlock()
		return
	}
	e.peers[peer].lost = lost
	e.losses.Add(1)
	if !graceful {
		e.lossEpoch++
		e.lastLoss = lost
	}
	e.failLocked(func(r *Request) bool {
		switch r.op {
		case opSend:
			return r.peer == peer
		default:
			if r.state == stPosted {
				return r.peer == peer || (!graceful && r.peer == AnySource)
			}
			return r.src == peer
		}
	}, evPeerLost, lost)
	e.wakeProbesLocked()
	e.mu.Unlock()
	e.sched.Fail(peer, lost)
}

// finLocked completes a send the receiver pulled entirely.
func (e *Engine) finLocked(peer int, en *entry) error {
	s := e.sends[en.id]
	if s == nil || !s.can(evFIN) { // a pushed send takes no FIN
		return driver.ProtocolError("rank %d finished unknown pulled send %d", peer, en.id)
	}
	if s.peer != peer {
		return driver.ProtocolError("rank %d finished rank %d's send %d", peer, s.peer, en.id)
	}
	delete(e.sends, en.id)
	// In e.sends, a pulled send is announced (stPullRTS) or being
	// withdrawn (stWithdrawing): both take the FIN.
	s.step(evFIN, Status{Source: e.rank, Tag: s.tag, Count: s.length()}, nil)
	return nil
}

// pullDone ends a pull: the receive completes and the sender hears it may
// reuse its buffer. A failed pull falls back to the sender pushing the data
// (a CTS for the same region): a peer that forbids reads of its memory
// mid-job costs speed, not correctness.
func (e *Engine) pullDone(peer int, r *Request, err error) {
	var out outbox
	e.mu.Lock()
	if _, ok := e.regions[r.id]; !ok || r.state != stPulling {
		e.mu.Unlock()
		return // the peer was lost meanwhile
	}
	c := newCtrl()
	if err != nil {
		e.stats.PullFallbacks++
		putCTS(c.buf[:], r.sendID, r.id, uint64(r.expect))
		c.pkt.Head = c.buf[:ctsLen]
		out.add(peer, c)
		e.mu.Unlock()
		out.flush(e)
		return
	}
	// The sender's completion is queued before the receive completes: a
	// receiver that closes as soon as its receive returns then finds the
	// FIN in the scheduler, which Close drains before saying goodbye. The
	// other order let the goodbye overtake it, and the sender failed a
	// send its peer had received. Out of e.regions, r is no longer failed
	// by a loss or a close meanwhile: its data is all here.
	delete(e.regions, r.id)
	putFin(c.buf[:], r.sendID)
	c.pkt.Head = c.buf[:finLen]
	e.stats.PulledBytes += uint64(r.expect)
	e.mu.Unlock()
	e.sched.Submit(peer, &c.pkt)
	e.mu.Lock()
	st := r.status
	st.Count = r.expect
	r.step(evPullDone, st, e.truncation(r.msgLen, r.length()))
	e.mu.Unlock()
}
