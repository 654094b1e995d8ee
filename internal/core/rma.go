package core

import (
	"errors"
	"fmt"
	"slices"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/sched"
)

// One-sided transfers in active-target epochs, MPI's
// post-start-complete-wait, over the rails' Put path: the target exposes a
// region of its memory to one origin (Expose) and posts its handle in a
// Post entry; the origin's put (PutV), matched to that post by tag as a
// receive is to a message, sends its bytes as one Bulk packet straight
// into the region, which the strategy may split over rails. The put
// completes once its data has left (the origin may reuse its memory); the
// exposure once every byte has landed. There is no handshake on the
// origin's side: a put costs the post and the data, half the round trips
// of a rendezvous send.
//
// Posts and puts are matched in the context they name, in the order of
// the target's posts; a context used for them must carry nothing else (a
// put that meets a message, or a receive that meets a post, fails).

// Expose exposes segs (their concatenation) to one put of world rank
// origin with tag, in context ctxID. The request completes when the put's
// bytes have all landed in segs, with Status.Count their number; until
// then segs must not be read or changed. A put of another size is refused:
// both sides fail. Cancel withdraws an exposure no byte has reached yet.
func (e *Engine) Expose(ctxID uint64, origin, tag int, segs [][]byte) *Request {
	r := e.newVecRequest(opRecv, origin, tag, segs)
	if err := e.checkRank(origin, false); err != nil {
		r.completeAlone(err)
		return r
	}
	if tag < 0 {
		r.completeAlone(fmt.Errorf("post tag %d is negative", tag))
		return r
	}
	e.mu.Lock()
	if e.closed != nil {
		r.step(evClose, Status{}, e.closed)
		e.mu.Unlock()
		return r
	}
	if lost := e.peers[origin].lost; lost != nil {
		r.step(evPeerLost, Status{}, lost)
		e.mu.Unlock()
		return r
	}
	c := e.ctxLocked(ctxID)
	seq := c.sendSeq[origin]
	c.sendSeq[origin]++
	r.src, r.msgLen, r.expect = origin, r.size, r.size
	r.ctxID = ctxID // what a revocation looks at
	r.status = Status{Source: origin, Tag: tag}
	if r.size == 0 {
		r.step(evFinish, r.status, nil)
	} else {
		r.move(evExpose)
		e.nextID++
		r.id = e.nextID
		e.regions[r.id] = r
	}
	putPost(r.hdr[:], ctxID, int32(tag), seq, uint64(r.size), r.id)
	r.pkt = sched.Packet{Kind: sched.Eager, Head: r.hdr[:postLen], Owner: r}
	r.inflight = 1
	e.mu.Unlock()
	e.sched.Submit(origin, &r.pkt)
	return r
}

// PutV puts the concatenation of segs into the region world rank target
// exposes with tag in context ctxID (Expose), once its post arrives. The
// request completes when the data has left, with Status.Count its length;
// until then segs must not change. It fails if the region's size is not
// the put's.
func (e *Engine) PutV(ctxID uint64, target, tag int, segs [][]byte) *Request {
	r := e.newVecRequest(opPut, target, tag, segs)
	if err := e.checkRank(target, false); err != nil {
		r.completeAlone(err)
		return r
	}
	if tag < 0 {
		r.completeAlone(fmt.Errorf("put tag %d is negative", tag))
		return r
	}
	var out outbox
	e.mu.Lock()
	switch c := e.ctxLocked(ctxID); {
	case e.closed != nil:
		r.step(evClose, Status{}, e.closed)
	default:
		r.c = c
		if u := c.findUnexpected(target, tag); u != nil {
			c.removeUnexpected(u)
			e.consumeLocked(r, u, &out)
		} else if lost := e.peers[target].lost; lost != nil {
			r.step(evPeerLost, Status{}, lost)
		} else {
			r.move(evPost)
			c.post(r)
		}
	}
	e.mu.Unlock()
	out.flush(e)
	return r
}

// acceptPostLocked answers the put r matched to peer's post of a size-byte
// region: its data goes as one Bulk packet into the region, or, if the
// sizes differ, it fails and the post is refused.
func (e *Engine) acceptPostLocked(r *Request, peer, size int, region uint64, out *outbox) {
	if lost := e.peers[peer].lost; lost != nil {
		r.step(evPeerLost, Status{}, lost)
		return
	}
	if size != r.size {
		r.step(evFinish, Status{}, fmt.Errorf("core: put of %d bytes into a %d-byte region exposed by rank %d", r.size, size, peer))
		if size > 0 {
			c := newCtrl()
			putRefuse(c.buf[:], region, uint64(r.size))
			c.pkt.Head = c.buf[:refuseLen]
			out.add(peer, c)
		}
		return
	}
	st := Status{Source: e.rank, Tag: r.tag, Count: size}
	if size == 0 {
		r.step(evFinish, st, nil)
		return
	}
	e.stats.Puts++
	r.move(evBulkStart) // no more cancelling
	r.moving.Store(true)
	r.bulk = sched.Packet{Kind: sched.Bulk, Method: e.peers[peer].methods.put(e.peers[peer].methods.pick(size, false)), Region: region, Owner: r, Vec: r.segs}
	r.inflight++
	out.addPacket(peer, &r.bulk)
}

// refusedLocked fails the region peer refused to put into (kindRefuse).
func (e *Engine) refusedLocked(peer int, en *entry) {
	r := e.regions[en.region]
	if r == nil || r.src != peer || !r.can(evRefused) { // only an exposure is refused
		return // failed or finished meanwhile
	}
	delete(e.regions, en.region)
	r.step(evRefused, r.status, fmt.Errorf("core: rank %d refused a %d-byte exposed region: its put is %d bytes", peer, r.expect, en.size))
}

// mismatchLocked fails r, a put that met a message or a receive that met a
// post (a context used for both), and disposes of u: a post is refused, an
// RTS ended with no data, an eager payload's credit returned.
func (e *Engine) mismatchLocked(r *Request, u *unexpected, out *outbox) {
	what := "message"
	c := newCtrl()
	switch {
	case u.post:
		what = "post"
		putRefuse(c.buf[:], u.region, uint64(r.length()))
		c.pkt.Head = c.buf[:refuseLen]
		out.add(u.peer, c)
	case u.rts:
		putCTS(c.buf[:], u.sendID, 0, 0)
		c.pkt.Head = c.buf[:ctsLen]
		out.add(u.peer, c)
	default:
		ctrlPool.Put(c)
		e.stats.UnexpectedBytes -= int64(u.size)
		e.creditLocked(u.peer, u.size, out)
		putBuf(u.data)
	}
	kind := "receive"
	if r.op == opPut {
		kind = "put"
	}
	r.step(evFinish, Status{}, fmt.Errorf("core: a %s met a %s from rank %d with tag %d: the context mixes one- and two-sided traffic", kind, what, u.peer, u.tag))
	*u = unexpected{}
	unexpectedPool.Put(u)
}

// CanRead reports whether this rank has a rail to peer that reads ranges
// of its memory (ReadSpans). Whether the reads are permitted is for peer
// to say: ReadableBy on its side.
func (e *Engine) CanRead(peer int) bool {
	return peer >= 0 && peer < e.size && peer != e.rank && e.sched.CanReadSpans(peer)
}

// ReadableBy reports whether peer has shown it can read this rank's
// memory in place: some rail to it offers single copy (shm's probe of
// process_vm_readv succeeded), as CanRead accepts any rail that reads.
func (e *Engine) ReadableBy(peer int) bool {
	if peer < 0 || peer >= e.size || peer == e.rank {
		return false
	}
	return slices.ContainsFunc(e.sched.Rails(peer), func(c driver.Caps) bool { return c.SingleCopy })
}

// ReadSpans copies the ranges src of world rank peer's memory into the
// parts of dst, in the calling goroutine: a one-sided get, whose
// synchronisation (the target's memory is ready and stays so until the
// read ends) is the caller's. It fails if peer is lost or no rail to it
// can read (CanRead).
func (e *Engine) ReadSpans(peer int, dst [][]byte, src []driver.Span) error {
	err := e.onMemory(peer, "read", func() error { return e.sched.ReadSpans(peer, dst, src) })
	if err == nil {
		e.mu.Lock()
		e.stats.Reads++
		e.stats.ReadBytes += uint64(segsLen(dst))
		e.mu.Unlock()
	}
	return err
}

// WriteSpans copies the parts of src into the ranges dst of world rank
// peer's memory, in the calling goroutine: a one-sided put, whose
// synchronisation is the caller's. It fails if peer is lost or no rail to
// it can write (a rail that reads, CanRead, writes too where it offers
// single copy, ReadableBy).
func (e *Engine) WriteSpans(peer int, dst []driver.Span, src [][]byte) error {
	return e.onMemory(peer, "write", func() error { return e.sched.WriteSpans(peer, dst, src) })
}

// onMemory runs move, a read or write of peer's memory, unless peer is
// lost; a peer found gone meanwhile is lost for everything else that needs
// it too, now, not when its rail notices.
func (e *Engine) onMemory(peer int, what string, move func() error) error {
	if err := e.checkRank(peer, false); err != nil {
		return err
	}
	e.mu.Lock()
	lost := e.peers[peer].lost
	e.mu.Unlock()
	if lost != nil {
		return lost
	}
	if err := move(); err != nil {
		if errors.Is(err, driver.ErrPeerGone) {
			e.PeerLost(peer, err)
			return &PeerLostError{Rank: peer, Err: err}
		}
		return fmt.Errorf("core: %s of rank %d's memory: %w", what, peer, err)
	}
	return nil
}
