package core

import "sync/atomic"

// matchCtx is one communicator context's matching state. Messages from one
// sender carry consecutive sequence numbers per context; an entry is matched
// only when its number is the next one expected, so the posted and
// unexpected queues see each sender's messages in send order whatever order
// the rails delivered them in (MPI's non-overtaking rule).
type matchCtx struct {
	id      uint64
	sendSeq []uint32 // next sequence number to each destination
	recvSeq []uint32 // next sequence number expected from each source
	held    map[heldKey]*unexpected

	postedHead, postedTail *Request
	unexpHead, unexpTail   *unexpected
	// takenHead and takenTail list the messages matched probes took out
	// of the unexpected queue (mprobe.go), until their Mrecv.
	takenHead, takenTail *unexpected
	// watched counts the messages with tag watchTag that joined the
	// unexpected queue (Engine.Watch); nil when nobody watches.
	watched     *atomic.Uint64
	watchTag    int
	watchNotify func() // called as one arrives, if not nil
	// revoked: the communicator of this context is revoked; its
	// operations fail with ErrRevoked (revoke.go).
	revoked bool
}

type heldKey struct {
	peer int
	seq  uint32
}

// unexpected is an arrived message no posted receive wanted yet: an eager
// message with its payload copied, a rendezvous RTS, or a post no put
// wanted yet.
type unexpected struct {
	peer     int
	tag      int
	size     int // message size in bytes
	seq      uint32
	rts      bool
	post     bool   // a region exposed to a put (Engine.Expose)
	region   uint64 // post: the exposed region's handle
	sendID   uint64 // rts
	pullAddr uint64 // rts: the sender's buffer when the receiver pulls
	report   bool   // rts: the sender asks when the data landed (flagReport)
	// withdrawn: its sender withdrew it while a matched probe held it
	// (mprobe.go); its Mrecv fails.
	withdrawn bool
	data      *[]byte // eager payload, pooled; (*data)[:size]

	prev, next *unexpected
}

func newMatchCtx(id uint64, size int) *matchCtx {
	return &matchCtx{
		id:      id,
		sendSeq: make([]uint32, size),
		recvSeq: make([]uint32, size),
	}
}

func matches(wantPeer, wantTag, peer, tag int) bool {
	return (wantPeer == AnySource || wantPeer == peer) && (wantTag == AnyTag || wantTag == tag)
}

// matchPosted removes and returns the oldest posted receive matching a
// message (peer, tag), or nil.
func (c *matchCtx) matchPosted(peer, tag int) *Request {
	for r := c.postedHead; r != nil; r = r.next {
		if matches(r.peer, r.tag, peer, tag) {
			c.unpost(r)
			return r
		}
	}
	return nil
}

// post appends r to the posted list; its caller moves it to stPosted.
func (c *matchCtx) post(r *Request) {
	r.prev, r.next = c.postedTail, nil
	if c.postedTail == nil {
		c.postedHead = r
	} else {
		c.postedTail.next = r
	}
	c.postedTail = r
}

// unpost removes r from the posted list, if it is there: a listed request
// has a previous one or heads the list. Its caller moves its state.
func (c *matchCtx) unpost(r *Request) {
	if r.prev == nil && c.postedHead != r {
		return
	}
	if r.prev == nil {
		c.postedHead = r.next
	} else {
		r.prev.next = r.next
	}
	if r.next == nil {
		c.postedTail = r.prev
	} else {
		r.next.prev = r.prev
	}
	r.prev, r.next = nil, nil
}

// findUnexpected returns the oldest unexpected message matching (peer, tag).
func (c *matchCtx) findUnexpected(peer, tag int) *unexpected {
	for u := c.unexpHead; u != nil; u = u.next {
		if matches(peer, tag, u.peer, u.tag) {
			return u
		}
	}
	return nil
}

func (c *matchCtx) pushUnexpected(u *unexpected)   { pushList(&c.unexpHead, &c.unexpTail, u) }
func (c *matchCtx) removeUnexpected(u *unexpected) { removeList(&c.unexpHead, &c.unexpTail, u) }
func (c *matchCtx) pushTaken(u *unexpected)        { pushList(&c.takenHead, &c.takenTail, u) }
func (c *matchCtx) removeTaken(u *unexpected)      { removeList(&c.takenHead, &c.takenTail, u) }

// findRTS returns peer's rendezvous request id waiting unexpected, or taken
// by a matched probe (taken true), or nil.
func (c *matchCtx) findRTS(peer int, id uint64) (u *unexpected, taken bool) {
	for u := c.unexpHead; u != nil; u = u.next {
		if u.rts && u.peer == peer && u.sendID == id {
			return u, false
		}
	}
	for u := c.takenHead; u != nil; u = u.next {
		if u.rts && u.peer == peer && u.sendID == id {
			return u, true
		}
	}
	return nil, false
}

// pushList appends u to the list from *head to *tail.
func pushList(head, tail **unexpected, u *unexpected) {
	u.prev, u.next = *tail, nil
	if *tail == nil {
		*head = u
	} else {
		(*tail).next = u
	}
	*tail = u
}

// removeList unlinks u from the list from *head to *tail.
func removeList(head, tail **unexpected, u *unexpected) {
	if u.prev == nil {
		*head = u.next
	} else {
		u.prev.next = u.next
	}
	if u.next == nil {
		*tail = u.prev
	} else {
		u.next.prev = u.prev
	}
	u.prev, u.next = nil, nil
}

// ReleaseContexts forgets the matching state of contexts whose
// communicator this rank closed: a program that makes and frees
// communicators would otherwise keep, for each one it ever made, two
// sequence numbers per peer and whatever its peers sent it that it never
// received — the lottery's choices drawn ahead for a next call that never
// came, notes about calls. Those eager messages are dropped (their bytes
// credited back to their senders, whose eager credit would otherwise
// shrink for good), and so are those that arrive for a released context
// later, while it is among the last releasedKept. A context with a
// receive posted, a message held for its turn, or a rendezvous whose
// sender waits for an answer, stays.
func (e *Engine) ReleaseContexts(ids ...uint64) {
	var out outbox
	e.mu.Lock()
	for _, id := range ids {
		c := e.ctxs[id]
		if c == nil || c.postedHead != nil || c.takenHead != nil || len(c.held) > 0 {
			continue
		}
		waits := false
		for u := c.unexpHead; u != nil && !waits; u = u.next {
			waits = u.rts || u.post
		}
		if waits {
			continue
		}
		for u := c.unexpHead; u != nil; {
			next := u.next
			e.dropLocked(u, &out)
			u = next
		}
		delete(e.ctxs, id)
		if e.last == c {
			e.last = nil
		}
		e.released.add(id)
	}
	e.mu.Unlock()
	out.flush(e)
}

// dropLocked discards the eager message u, crediting its bytes back.
func (e *Engine) dropLocked(u *unexpected, out *outbox) {
	e.stats.UnexpectedBytes -= int64(u.size)
	e.creditLocked(u.peer, u.size, out)
	putBuf(u.data)
	*u = unexpected{}
	unexpectedPool.Put(u)
}

// releasedKept is how many released contexts an engine remembers, to drop
// what is still on its way to them: a message arrives within moments of
// its communicator's close, and a ring of this many covers a thousand
// communicators closed meanwhile.
const releasedKept = 4096

// releasedRing remembers the last releasedKept released contexts.
type releasedRing struct {
	ids  []uint64
	next int
	set  map[uint64]struct{}
}

func (r *releasedRing) add(id uint64) {
	if r.set == nil {
		r.set = make(map[uint64]struct{}, releasedKept)
		r.ids = make([]uint64, 0, releasedKept)
	}
	if _, ok := r.set[id]; ok {
		return
	}
	if len(r.ids) < releasedKept {
		r.ids = append(r.ids, id)
	} else {
		delete(r.set, r.ids[r.next])
		r.ids[r.next] = id
		r.next = (r.next + 1) % releasedKept
	}
	r.set[id] = struct{}{}
}

func (r *releasedRing) has(id uint64) bool {
	_, ok := r.set[id]
	return ok
}
