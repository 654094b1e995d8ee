package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/sched"
)

// parkPullMin is the pulled-message size from which the sender parks
// while the receiver copies: ~150 µs of copy at CMA's ~7 GB/s, several
// wake-ups' worth. Measured here, parking for 64 KiB pulls tripled their
// time (15 µs → 48 µs).
const parkPullMin = 1 << 20

// maxGrant caps a sender's eager credit. The credit is how far a sender
// may run ahead of a receiver that has not posted its receives yet, and
// what runs ahead is copied twice (into the unexpected queue, then out)
// and held on the heap. With UnexpectedLimit / ranks alone, a 2-rank job
// granted 32 MiB: a root broadcasting in a loop ran hundreds of messages
// ahead, the receiver's backlog left the caches and grew its heap, and
// calls stalled for 20–37 ms. Measured here, 40 000 Bcasts back to back on
// 2 ranks, mean per call with 32 MiB → 4 MiB → 1 MiB of credit: 4 KiB
// 1.9 → 0.84 → 0.73 µs, 16 KiB 3.6–4.3 → 1.9 → 1.7–2.2 µs, 64 KiB sent
// eagerly 8.7 → 3.3 (at 2 MiB) µs; the longest call fell from 20–37 ms to
// 3–4 ms at 4 MiB and under 1 ms at 1 MiB.
const maxGrant = 1 << 20

// clockBase is the origin of nanotime's clock.
var clockBase = time.Now()

// nanotime returns a monotonic clock in ns, never 0.
func nanotime() int64 { return int64(time.Since(clockBase)) + 1 }

// Engine is one rank's matching engine. It is safe for concurrent use; its
// lock is never held while the scheduler or a rail runs, because an
// in-process rail delivers synchronously and the answer may come straight
// back into this engine.
type Engine struct {
	rank, size int
	cfg        Config
	sched      *sched.Scheduler
	grant      int64 // eager credit each sender starts with (UnexpectedLimit / size, at most maxGrant)
	spin       *spinPolicy

	mu        sync.Mutex
	ctxs      map[uint64]*matchCtx
	last      *matchCtx // the context used last: most traffic stays in one
	peers     []peer
	sends     map[uint64]*Request // rendezvous sends waiting for CTS, by id
	regions   map[uint64]*Request // rendezvous receives waiting for data, by handle
	nextID    uint64
	closed    error
	probeWake chan struct{} // closed when the unexpected queues or peer states change
	lossEpoch uint64        // counts abnormal peer losses (any-source probes watch it)
	losses    atomic.Uint64 // counts peers lost or closed: what code that waits without a request watches
	lastLoss  error
	stats     Stats
	heldLimit int
	onAbort   func(peer, code int) // SetAbortHandler's
	// revokedKeys holds the communicators (by key) this rank knows are
	// revoked, so that a revocation is passed on once; onRevoke is told
	// of those a peer revoked (SetRevokeHandler). Both under mu.
	revokedKeys map[uint64]struct{}
	onRevoke    func(key uint64)
	released    releasedRing // contexts closed here: what still arrives for them is dropped (match.go)
}

// SetAbortHandler makes f what a peer's abort (AbortPeers) calls, with
// the peer's rank and code: a process rank exits there. It must be set
// before traffic starts.
func (e *Engine) SetAbortHandler(f func(peer, code int)) { e.onAbort = f }

// AbortPeers tells every peer not lost that the job is aborted with code,
// and waits up to wait for the messages to leave.
func (e *Engine) AbortPeers(code int, wait time.Duration) {
	for p := 0; p < e.size; p++ {
		e.mu.Lock()
		lost := e.peers[p].lost != nil
		e.mu.Unlock()
		if p == e.rank || lost {
			continue
		}
		c := newCtrl()
		putAbort(c.buf[:], int64(code))
		c.pkt.Head = c.buf[:abortLen]
		e.sched.Submit(p, &c.pkt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_ = e.sched.Drain(ctx) // best effort: the caller exits next
}

// peer is what the engine knows of one other rank.
type peer struct {
	credits   int64 // eager bytes we may still send to it
	owed      int64 // eager bytes of its we consumed but have not yet credited back
	lost      error // *PeerLostError once it is unreachable
	rndv      int   // largest message sent to it eagerly
	iovec     int   // smallest eager payload sent to it by reference
	methods   largeMethods
	pullable  bool   // it can read this rank's memory (IsendPulled)
	policy    Policy // as last set (Policy returns it)
	cancelled map[uint64]struct{}
}

// Stats are counters for tests, benchmarks and `commtune info`.
type Stats struct {
	EagerCopySends  uint64
	EagerIovecSends uint64
	RendezvousSends uint64
	UnexpectedBytes int64  // eager payload bytes buffered now
	UnexpectedPeak  int64  // the most ever buffered at once
	CopiedBytes     uint64 // bytes the engine copied into receive buffers (eager only)
	CreditFallbacks uint64 // eager-sized sends that went rendezvous for lack of credit
	PullSends       uint64 // rendezvous sends the receiver pulled (single copy)
	PulledBytes     uint64 // bytes this rank pulled from senders' memory
	PullFallbacks   uint64 // pulls that failed and fell back to the sender pushing
	PolledWaits     uint64 // waits that ended while the waiter polled the network
	SpinMisses      uint64 // waits that polled for the whole budget, then parked
	ParkedWaits     uint64 // waits that parked at once (no polling budget)
	VectorSends     uint64 // sends given as a list of segments (IsendV)
	VectorRecvs     uint64 // receives given as a list of segments (IrecvV)
	Puts            uint64 // one-sided puts into regions peers exposed (PutV)
	Reads           uint64 // one-sided reads of peers' memory (ReadSpans)
	ReadBytes       uint64 // bytes those reads copied
}

// NewEngine returns the engine of rank in a job of size ranks, sending
// through sc. Call SetPeerPolicy (or Configure) once the rails are added.
func NewEngine(rank, size int, cfg Config, sc *sched.Scheduler) (*Engine, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rank < 0 || rank >= size {
		return nil, fmt.Errorf("core: rank %d outside job of %d", rank, size)
	}
	e := &Engine{
		rank: rank, size: size, cfg: cfg, sched: sc,
		grant:     min(cfg.UnexpectedLimit/int64(size), maxGrant),
		spin:      newSpinPolicy(cfg.SpinWait, cfg.YieldWait),
		ctxs:      make(map[uint64]*matchCtx),
		peers:     make([]peer, size),
		sends:     make(map[uint64]*Request),
		regions:   make(map[uint64]*Request),
		heldLimit: 1 << 16,
	}
	for i := range e.peers {
		e.peers[i] = peer{credits: e.grant, rndv: cfg.RendezvousThreshold, iovec: cfg.IovecThreshold}
	}
	return e, nil
}

// Configure gives every peer the config's switch points and the rails'
// default rendezvous method (SetPolicy for finer choices).
func (e *Engine) Configure() {
	for p := 0; p < e.size; p++ {
		e.SetPolicy(p, Policy{Rendezvous: e.cfg.RendezvousThreshold, Iovec: e.cfg.IovecThreshold})
	}
}

// Rank returns the engine's world rank.
func (e *Engine) Rank() int { return e.rank }

// Size returns the number of ranks in the job.
func (e *Engine) Size() int { return e.size }

// Stats returns a snapshot of the counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	s := e.stats
	e.mu.Unlock()
	s.PolledWaits, s.SpinMisses, s.ParkedWaits = e.spin.counts()
	return s
}

func (e *Engine) newRequest(op opKind, peer, tag int, buf []byte) *Request {
	return &Request{e: e, op: op, peer: peer, tag: tag, buf: buf}
}

// smallEager is the payload room of a pooled request's inline buffer: a
// small blocking send is copied there, behind its header, instead of into
// a buffer of its own.
const smallEager = 256

var requestPool = sync.Pool{New: func() any { return new(Request) }}

func (e *Engine) tempRequest(op opKind, peer, tag int, buf []byte) *Request {
	r := requestPool.Get().(*Request)
	r.e, r.op, r.peer, r.tag, r.buf, r.temp = e, op, peer, tag, buf, true
	return r
}

// newVecRequest is newRequest for a message made of segments.
func (e *Engine) newVecRequest(op opKind, peer, tag int, segs [][]byte) *Request {
	return &Request{e: e, op: op, peer: peer, tag: tag, vec: true, segs: segs, size: segsLen(segs)}
}

// tempVecRequest is tempRequest for a message made of segments.
func (e *Engine) tempVecRequest(op opKind, peer, tag int, segs [][]byte) *Request {
	r := e.tempRequest(op, peer, tag, nil)
	r.vec, r.segs, r.size = true, segs, segsLen(segs)
	return r
}

// IsendV is Isend for a message made of several memory regions: its bytes
// are the concatenation of segs, which travel without first being packed
// into one buffer (an eager copy gathers them straight behind the header;
// larger messages go from the segments themselves). On the wire it is an
// ordinary message: any receive, contiguous or not, matches it. Neither
// the list nor the memory it points to may change until the request
// completes. It is never read in place by its receiver (an RTS-pull names
// one address): where the policy would pull, it is pushed instead.
func (e *Engine) IsendV(ctxID uint64, dest, tag int, segs [][]byte) *Request {
	return e.isend(e.newVecRequest(opSend, dest, tag, segs), ctxID)
}

// IsendVTemp is IsendV with a pooled request, for a caller that waits at
// once and then calls Release (see IsendTemp).
func (e *Engine) IsendVTemp(ctxID uint64, dest, tag int, segs [][]byte) *Request {
	return e.isend(e.tempVecRequest(opSend, dest, tag, segs), ctxID)
}

// IrecvV is Irecv into several memory regions: the message's bytes land in
// segs in order, its capacity being the sum of their lengths (a longer
// message fills them and fails with a TruncateError, as for one buffer).
// Neither the list nor the memory it points to may be used until the
// request completes.
func (e *Engine) IrecvV(ctxID uint64, src, tag int, segs [][]byte) *Request {
	return e.irecv(e.newVecRequest(opRecv, src, tag, segs), ctxID)
}

// IrecvVTemp is IrecvV with a pooled request, for a caller that waits at
// once and then calls Release.
func (e *Engine) IrecvVTemp(ctxID uint64, src, tag int, segs [][]byte) *Request {
	return e.irecv(e.tempVecRequest(opRecv, src, tag, segs), ctxID)
}

// IsendTemp is Isend for a caller that waits for the request at once and
// then hands it back with Release (a blocking Send): the request comes from
// a pool, and a small message is copied behind its header in the request
// itself and completes when it has left, rather than in a buffer of its own.
func (e *Engine) IsendTemp(ctxID uint64, dest, tag int, buf []byte) *Request {
	return e.isend(e.tempRequest(opSend, dest, tag, buf), ctxID)
}

// IsendPulled is IsendTemp asking for single copy: where dest can read
// this rank's memory in place (a shared-memory rail with CMA), it does,
// at any size, whatever the policy says for point-to-point. Collectives
// whose ranks each read from several peers at once ask so: their copies
// are what costs, not one pair's pipelining.
func (e *Engine) IsendPulled(ctxID uint64, dest, tag int, buf []byte) *Request {
	r := e.tempRequest(opSend, dest, tag, buf)
	r.wantPull = true
	return e.isend(r, ctxID)
}

// Issend starts a synchronous send of buf to world rank dest with tag in
// context ctxID: the request completes only once the receiver has matched
// it with a receive, not as soon as the data has left. It takes the
// rendezvous path at every size, 0 bytes included (an RTS, then the
// receiver's CTS, or its read of buf where the policy pulls), so an eager
// send's credit and buffering never apply to it.
func (e *Engine) Issend(ctxID uint64, dest, tag int, buf []byte) *Request {
	r := e.newRequest(opSend, dest, tag, buf)
	r.sync = true
	return e.isend(r, ctxID)
}

// IssendTemp is Issend with a pooled request, for a caller that waits at
// once and then calls Release (a blocking Ssend).
func (e *Engine) IssendTemp(ctxID uint64, dest, tag int, buf []byte) *Request {
	r := e.tempRequest(opSend, dest, tag, buf)
	r.sync = true
	return e.isend(r, ctxID)
}

// IrecvTemp is Irecv with a pooled request, for a caller that waits at
// once and then calls Release.
func (e *Engine) IrecvTemp(ctxID uint64, src, tag int, buf []byte) *Request {
	return e.irecv(e.tempRequest(opRecv, src, tag, buf), ctxID)
}

// Release hands back a completed request from IsendTemp or IrecvTemp; it
// must not be used afterwards. It is recycled once the scheduler has
// reported all its packets sent.
func (e *Engine) Release(r *Request) {
	if r.sentNow {
		// Sent in isend's goroutine (SendNow): nothing else ever held it.
		*r = Request{}
		requestPool.Put(r)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !r.temp || r.state != stDone || r.released {
		return
	}
	r.released = true
	e.recycleLocked(r)
}

func (e *Engine) recycleLocked(r *Request) {
	if !r.released || r.inflight > 0 {
		return
	}
	wake, timer := r.wake, r.timer
	*r = Request{wake: wake, timer: timer}
	if wake != nil {
		select { // a signal the last waiter did not take
		case <-wake:
		default:
		}
	}
	requestPool.Put(r)
}

// ctxLocked returns the matching context id, creating it on first use: a
// message may arrive for a communicator this rank has not built yet.
func (e *Engine) ctxLocked(id uint64) *matchCtx {
	if e.last != nil && e.last.id == id {
		return e.last
	}
	c := e.ctxs[id]
	if c == nil {
		c = newMatchCtx(id, e.size)
		e.ctxs[id] = c
	}
	e.last = c
	return c
}

func (e *Engine) checkRank(r int, any bool) error {
	if (any && r == AnySource) || (r >= 0 && r < e.size) {
		return nil
	}
	return fmt.Errorf("rank %d outside job of %d", r, e.size)
}

// Isend starts sending buf to world rank dest with tag in context ctxID. buf
// must not be modified until the request completes.
func (e *Engine) Isend(ctxID uint64, dest, tag int, buf []byte) *Request {
	return e.isend(e.newRequest(opSend, dest, tag, buf), ctxID)
}

func (e *Engine) isend(r *Request, ctxID uint64) *Request {
	dest, tag, buf := r.peer, r.tag, r.buf
	if err := e.checkRank(dest, false); err != nil {
		r.completeAlone(err)
		return r
	}
	if tag < 0 {
		r.completeAlone(fmt.Errorf("send tag %d is negative", tag))
		return r
	}
	n := r.length()
	e.mu.Lock()
	if e.closed != nil {
		r.step(evClose, Status{}, e.closed)
		e.mu.Unlock()
		return r
	}
	p := &e.peers[dest]
	if p.lost != nil {
		r.step(evPeerLost, Status{}, p.lost)
		e.mu.Unlock()
		return r
	}
	if r.vec {
		e.stats.VectorSends++
	}
	c := e.ctxLocked(ctxID)
	if c.revoked {
		r.step(evClose, Status{}, ErrRevoked)
		e.mu.Unlock()
		return r
	}
	seq := c.sendSeq[dest]
	c.sendSeq[dest]++
	pull := r.wantPull && p.pullable && n > 0 && !r.vec
	switch {
	case !pull && !r.sync && n <= p.rndv && int64(n) <= p.credits:
		p.credits -= int64(n)
		if r.temp && n < p.iovec && n <= smallEager-eagerHeaderLen {
			// The caller waits anyway: a small copy goes behind the header
			// in the request itself, with no buffer of its own.
			r.proto = protoEagerInline
			e.stats.EagerCopySends++
			r.move(evEager)
		} else if n < p.iovec {
			r.proto = protoEagerCopy
			e.stats.EagerCopySends++
			// Buffered: the payload is copied below, so the user may reuse
			// buf as soon as Isend returns.
			r.step(evFinish, Status{Source: e.rank, Tag: tag, Count: n}, nil)
		} else {
			r.proto = protoEagerIovec
			e.stats.EagerIovecSends++
			r.move(evEager)
		}
	default:
		if n <= p.rndv && !pull && !r.sync {
			e.stats.CreditFallbacks++
		}
		r.proto = protoRendezvous
		e.stats.RendezvousSends++
		e.nextID++
		r.id = e.nextID
		r.ctxID = ctxID // what a revocation and a withdraw look at
		e.sends[r.id] = r
		// Only a contiguous send can be pulled: an RTS-pull names one
		// address. Others take the Put method for their size (pick).
		if m := p.methods.pick(n, n > 0 && !r.vec); pull || m >= 0 && p.methods[m].pull {
			// The receiver reads buf in place: it must not move (Go
			// stacks do). Until it begins to read, a withdraw (cancel)
			// that it acknowledges takes the send back.
			r.pin.Pin(&buf[0])
			r.pinned, r.proto = true, protoPull
			r.seq = seq
			r.move(evRTSPull)
			// While the receiver copies a large message this side has nothing
			// to poll for: spinning would take the processor the copy may
			// need. Below parkPullMin the copy is over before a parked
			// waiter could be woken (3–30 µs here), so it spins.
			if n >= parkPullMin {
				r.moving.Store(true)
			}
			e.stats.PullSends++
		} else {
			r.bulkMethod = p.methods.put(m)
			r.move(evRTS)
		}
	}
	r.inflight = 1
	e.mu.Unlock()

	// An eager message's header is encoded once, here: the at-once path
	// sends it as is, the others copy it in front of the payload.
	h := r.hdr[:eagerHeaderLen]
	if r.proto.eager() {
		putEagerHeader(h, ctxID, int32(tag), seq, n)
		if !r.vec && e.sched.SendNow(dest, h, buf) {
			r.sentAtOnce(Status{Source: e.rank, Tag: tag, Count: n})
			return r
		}
	}
	switch r.proto {
	case protoEagerInline:
		b := r.small[:eagerHeaderLen+n]
		copy(b, h)
		r.gather(b[eagerHeaderLen:])
		r.pkt = sched.Packet{Kind: sched.Eager, Head: b, Owner: r}
	case protoEagerCopy:
		r.copyBuf = getBuf(eagerHeaderLen + n)
		b := *r.copyBuf
		copy(b, h)
		r.gather(b[eagerHeaderLen:])
		r.pkt = sched.Packet{Kind: sched.Eager, Head: b, Owner: r}
	case protoEagerIovec:
		r.pkt = sched.Packet{Kind: sched.Eager, Head: h, Body: buf, Owner: r}
		if r.vec {
			r.pkt.Vec = r.segs // by reference, segment by segment
		}
	case protoPull:
		putRTSPull(r.hdr[:], ctxID, int32(tag), seq, uint64(n), r.id, uint64(uintptr(unsafe.Pointer(&buf[0]))))
		r.pkt = sched.Packet{Kind: sched.Eager, Head: r.hdr[:rtsPullLen], Owner: r}
	case protoRendezvous:
		putRTS(r.hdr[:], ctxID, int32(tag), seq, uint64(n), r.id)
		if e.sched.Reports(dest) {
			r.hdr[1] = flagReport
		}
		r.pkt = sched.Packet{Kind: sched.Eager, Head: r.hdr[:rtsLen], Owner: r}
	}
	e.sched.Submit(dest, &r.pkt)
	return r
}

// sentAtOnce completes an eager send the scheduler wrote in isend's own
// goroutine (SendNow): no packet, no report. The request is still that
// goroutine's alone — in no table, returned to nobody yet — so it
// completes without the lock; a pooled one is recycled the same way
// (Release).
func (r *Request) sentAtOnce(st Status) {
	r.inflight = 0
	r.sentNow = r.temp
	if r.move(evSent) { // refused for an eager copy: done already (buffered)
		r.complete(st, nil)
	}
}

// gather copies r's message into dst, which holds exactly its length: the
// one copy of the eager protocols, straight from the segments of a vector.
func (r *Request) gather(dst []byte) {
	if r.vec {
		gatherSegs(dst, r.segs)
	} else {
		copy(dst, r.buf)
	}
}

// completeAlone completes a request that never reached the engine's state.
func (r *Request) completeAlone(err error) {
	r.e.mu.Lock()
	r.step(evFinish, Status{}, err)
	r.e.mu.Unlock()
}

// sent handles the scheduler's report that one of r's packets left.
func (e *Engine) sent(r *Request, p *sched.Packet, err error) {
	if err != nil {
		err = e.wrapLost(r.peer, err)
	}
	e.mu.Lock()
	r.inflight--
	switch {
	case p == &r.bulk:
		r.step(evSent, Status{Source: e.rank, Tag: r.tag, Count: r.bulk.Len()}, err)
	case r.proto == protoEagerCopy:
		putBuf(r.copyBuf)
		r.copyBuf = nil
	case r.proto == protoEagerIovec, r.proto == protoEagerInline:
		r.step(evSent, Status{Source: e.rank, Tag: r.tag, Count: r.length()}, err)
	case (r.proto == protoRendezvous || r.proto == protoPull) && err != nil:
		// The RTS did not leave: the peer is lost.
		if r.step(evPeerLost, Status{}, err) {
			delete(e.sends, r.id)
		}
	}
	e.recycleLocked(r)
	e.mu.Unlock()
}

func (e *Engine) wrapLost(peer int, err error) error {
	var pl *PeerLostError
	if errors.As(err, &pl) {
		return err
	}
	return &PeerLostError{Rank: peer, Err: err}
}

// Irecv posts a receive into buf for a message from world rank src (or
// AnySource) with tag (or AnyTag) in context ctxID.
func (e *Engine) Irecv(ctxID uint64, src, tag int, buf []byte) *Request {
	return e.irecv(e.newRequest(opRecv, src, tag, buf), ctxID)
}

// IrecvAlloc posts a receive of a message of any size from world rank src
// (or AnySource) with tag (or AnyTag) in context ctxID: its buffer is
// made when a message matches, of exactly the message's size (Buffer).
func (e *Engine) IrecvAlloc(ctxID uint64, src, tag int) *Request {
	r := e.newRequest(opRecv, src, tag, nil)
	r.alloc = true
	return e.irecv(r, ctxID)
}

// Buffer returns the buffer r received into: for IrecvAlloc, the one made
// at the match (nil before it, or for an empty message).
func (r *Request) Buffer() []byte { return r.buf }

func (e *Engine) irecv(r *Request, ctxID uint64) *Request {
	src, tag := r.peer, r.tag
	if err := e.checkRank(src, true); err != nil {
		r.completeAlone(err)
		return r
	}
	if tag < AnyTag {
		r.completeAlone(fmt.Errorf("receive tag %d is invalid", tag))
		return r
	}
	var out outbox
	e.mu.Lock()
	switch c := e.ctxLocked(ctxID); {
	case e.closed != nil:
		r.step(evClose, Status{}, e.closed)
	default:
		r.c = c
		if r.vec {
			e.stats.VectorRecvs++
		}
		if c.revoked {
			r.step(evClose, Status{}, ErrRevoked)
		} else if u := c.findUnexpected(src, tag); u != nil {
			c.removeUnexpected(u)
			e.consumeLocked(r, u, &out)
		} else if src != AnySource && e.peers[src].lost != nil {
			r.step(evPeerLost, Status{}, e.peers[src].lost)
		} else {
			r.move(evPost)
			c.post(r)
		}
	}
	e.mu.Unlock()
	out.flush(e)
	return r
}

// consumeLocked hands the unexpected message u to the receive r.
func (e *Engine) consumeLocked(r *Request, u *unexpected, out *outbox) {
	if (r.op == opPut) != u.post {
		e.mismatchLocked(r, u, out)
		return
	}
	if u.post {
		e.acceptPostLocked(r, u.peer, u.size, u.region, out)
	} else if u.rts {
		e.acceptRTSLocked(r, u.peer, u.tag, u.size, u.sendID, u.pullAddr, u.report, out)
	} else {
		e.fillLocked(r, u.peer, u.tag, (*u.data)[:u.size], out)
		e.stats.UnexpectedBytes -= int64(u.size)
		putBuf(u.data)
	}
	*u = unexpected{}
	unexpectedPool.Put(u)
}

// fillLocked copies an eager payload into r, completes it, and counts the
// payload as consumed for the sender's credits.
func (e *Engine) fillLocked(r *Request, peer, tag int, payload []byte, out *outbox) {
	if r.alloc && len(payload) > 0 {
		r.buf = make([]byte, len(payload))
	}
	var n int
	if r.vec {
		n = scatterSegs(r.segs, payload)
	} else {
		n = copy(r.buf, payload)
	}
	e.stats.CopiedBytes += uint64(n)
	var err error
	if room := r.length(); len(payload) > room {
		err = &TruncateError{MessageLen: len(payload), BufferLen: room}
	}
	r.step(evFinish, Status{Source: peer, Tag: tag, Count: n}, err)
	e.creditLocked(peer, len(payload), out)
}

// creditLocked records n consumed bytes of peer's eager credit and returns
// them in one Credit entry once a quarter of the grant has built up, so a
// ping-pong costs no extra packets but a flood is throttled.
func (e *Engine) creditLocked(peer, n int, out *outbox) {
	if n == 0 {
		return
	}
	p := &e.peers[peer]
	p.owed += int64(n)
	if p.owed >= e.grant/4 {
		c := newCtrl()
		putCredit(c.buf[:], uint64(p.owed))
		c.pkt.Head = c.buf[:creditLen]
		out.add(peer, c)
		p.owed = 0
	}
}

// acceptRTSLocked answers a matched rendezvous request: with a CTS naming
// r's buffer as the region the data lands in, or, when the sender exposed
// its buffer (pullAddr ≠ 0), by pulling the data straight into r's buffer
// once the lock is released.
func (e *Engine) acceptRTSLocked(r *Request, peer, tag, size int, sendID, pullAddr uint64, report bool, out *outbox) {
	r.src, r.msgLen, r.sendID = peer, size, sendID
	r.status = Status{Source: peer, Tag: tag}
	if r.alloc && size > 0 {
		r.buf = make([]byte, size)
	}
	if lost := e.peers[peer].lost; lost != nil {
		r.step(evPeerLost, Status{Source: peer, Tag: tag}, lost)
		return
	}
	r.expect = min(size, r.length())
	c := newCtrl()
	if r.expect == 0 {
		putCTS(c.buf[:], sendID, 0, 0)
		r.step(evFinish, Status{Source: peer, Tag: tag}, e.truncation(size, r.length()))
	} else {
		r.move(evMatch)
		e.nextID++
		r.id = e.nextID
		e.regions[r.id] = r
		if pullAddr != 0 {
			ctrlPool.Put(c)
			out.addPull(peer, r, pullAddr)
			return
		}
		putCTS(c.buf[:], sendID, r.id, uint64(r.expect))
		if report {
			r.reportSince = nanotime()
		}
		// A parked waiter comes to receive the data itself.
		r.pokeDue = true
		r.signal()
	}
	c.pkt.Head = c.buf[:ctsLen]
	out.add(peer, c)
}

func (e *Engine) truncation(msgLen, bufLen int) error {
	if msgLen > bufLen {
		return &TruncateError{MessageLen: msgLen, BufferLen: bufLen}
	}
	return nil
}

// Iprobe reports whether a message matching (src, tag) is waiting in
// context ctxID, without receiving it.
func (e *Engine) Iprobe(ctxID uint64, src, tag int) (Status, bool, error) {
	if err := e.checkRank(src, true); err != nil {
		return Status{}, false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st, ok, err := e.probeLocked(ctxID, src, tag)
	return st, ok, err
}

// Watch returns a counter of the messages with tag that arrive in context
// ctxID while no receive is posted for them, so that they wait in the
// unexpected queue; messages waiting there already are counted. A caller
// that only probes for such messages now and then (the collective
// calls' control notes) learns with one atomic load whether to look.
// notify, if not nil, is called as each one arrives, whoever delivers it
// (a transport's goroutine, a peer's call), under the engine's lock: it
// must neither block nor call the engine. A context has one watched tag:
// watching another replaces it.
func (e *Engine) Watch(ctxID uint64, tag int, notify func()) *atomic.Uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.ctxLocked(ctxID)
	if c.watched != nil && c.watchTag == tag {
		return c.watched
	}
	c.watched, c.watchTag, c.watchNotify = new(atomic.Uint64), tag, notify
	for u := c.unexpHead; u != nil; u = u.next {
		if u.tag == tag {
			c.watched.Add(1)
		}
	}
	return c.watched
}

// Losses counts the peers lost or closed so far: a waiter that waits for
// no request (a shared-memory collective) looks at it between polls and
// asks Lost when it moves.
func (e *Engine) Losses() uint64 { return e.losses.Load() }

// Pending describes the messages from world rank src (AnySource: from
// any) that wait in context ctxID with no receive posted for them, oldest
// first: what a caller that has waited long for a message looks through,
// to tell why it has not come. It allocates.
func (e *Engine) Pending(ctxID uint64, src int) []Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Status
	for u := e.ctxLocked(ctxID).unexpHead; u != nil; u = u.next {
		if src == AnySource || u.peer == src {
			out = append(out, Status{Source: u.peer, Tag: u.tag, Count: u.size})
		}
	}
	return out
}

func (e *Engine) probeLocked(ctxID uint64, src, tag int) (Status, bool, error) {
	// A closed engine receives nothing, so it shows nothing either: a
	// probe that found a message its receive then refuses would probe it
	// again for good.
	if e.closed != nil {
		return Status{}, false, e.closed
	}
	c := e.ctxLocked(ctxID)
	if c.revoked {
		return Status{}, false, ErrRevoked
	}
	if u := c.findUnexpected(src, tag); u != nil {
		return Status{Source: u.peer, Tag: u.tag, Count: u.size}, true, nil
	}
	if src != AnySource && e.peers[src].lost != nil {
		return Status{}, false, e.peers[src].lost
	}
	return Status{}, false, nil
}

// Probe waits until a message matching (src, tag) is waiting in context
// ctxID and describes it, or ctx ends. An any-source probe fails if a peer
// is lost abnormally while it waits.
func (e *Engine) Probe(ctx context.Context, ctxID uint64, src, tag int) (Status, error) {
	if err := e.checkRank(src, true); err != nil {
		return Status{}, err
	}
	var st Status
	err := e.probeWait(ctx, func() (ok bool, err error) {
		st, ok, err = e.probeLocked(ctxID, src, tag)
		return ok, err
	})
	return st, err
}

// probeWait calls find with e.mu held until it finds what it looks for or
// fails, waiting for arrivals in between; it fails if ctx ends first, or
// if a peer is lost abnormally meanwhile.
func (e *Engine) probeWait(ctx context.Context, find func() (bool, error)) error {
	e.mu.Lock()
	epoch := e.lossEpoch
	for {
		ok, err := find()
		if ok || err != nil {
			e.mu.Unlock()
			return err
		}
		if e.lossEpoch != epoch {
			err := e.lastLoss
			e.mu.Unlock()
			return err
		}
		if e.probeWake == nil {
			e.probeWake = make(chan struct{})
		}
		wake := e.probeWake
		e.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
		e.mu.Lock()
	}
}

func (e *Engine) wakeProbesLocked() {
	if e.probeWake != nil {
		close(e.probeWake)
		e.probeWake = nil
	}
}

// cancel withdraws r if it has not matched (receive) or its data has not
// started (rendezvous send): the protocol says where (reqMoves, evCancel).
// A pulled send is the receiver's to read once announced: it asks the
// receiver to withdraw it and waits for the answer (or for the FIN of a
// read that had begun), a round trip.
func (e *Engine) cancel(r *Request) bool {
	var out outbox
	e.mu.Lock()
	from := r.state
	if !r.step(evCancel, Status{}, ErrCanceled) {
		e.mu.Unlock()
		return false
	}
	switch from {
	case stPullRTS:
		c := newCtrl()
		putWithdraw(c.buf[:], r.ctxID, r.seq, r.id)
		c.pkt.Head = c.buf[:withdrawLen]
		out.add(r.peer, c)
		fallthrough
	case stWithdrawing:
		e.mu.Unlock()
		out.flush(e)
		_, err := r.Wait(context.Background())
		return errors.Is(err, ErrCanceled)
	case stPosted:
		r.c.unpost(r)
	case stExposed:
		// An exposure no byte has reached (now stScrap). It stays in
		// regions, so that a put the origin started before it heard of
		// the withdrawal lands in scratch memory instead of failing the
		// rail as a put into an unknown region; the put's last byte
		// removes it.
	case stRTS:
		delete(e.sends, r.id)
		c := newCtrl()
		putCancel(c.buf[:], r.id)
		c.pkt.Head = c.buf[:cancelLen]
		out.add(r.peer, c)
	}
	e.mu.Unlock()
	out.flush(e)
	return true
}

// Close finalizes the engine: pending requests fail with ErrClosed and new
// ones are refused. Drain the scheduler first so nothing queued is lost.
func (e *Engine) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed != nil {
		return
	}
	e.closed = ErrClosed
	e.failLocked(func(*Request) bool { return true }, evClose, ErrClosed)
	e.wakeProbesLocked()
}

// failLocked moves by ev (evClose or evPeerLost), completing with err,
// every pending receive, rendezvous receive and rendezvous send that which
// selects.
func (e *Engine) failLocked(which func(*Request) bool, ev reqEvent, err error) {
	for _, c := range e.ctxs {
		for r := c.postedHead; r != nil; {
			next := r.next
			if which(r) {
				c.unpost(r)
				r.step(ev, Status{}, err)
			}
			r = next
		}
	}
	for id, r := range e.regions {
		if which(r) {
			delete(e.regions, id)
			r.step(ev, r.status, err)
		}
	}
	for id, r := range e.sends {
		if which(r) {
			delete(e.sends, id)
			r.step(ev, Status{}, err)
		}
	}
}

// outbox collects packets produced under the lock (control entries,
// rendezvous data); they are submitted after it is released.
type outbox struct {
	n        int
	items    [4]outItem
	more     []outItem
	pulls    []pullItem
	arrivals []arrival
	revokes  []uint64 // communicators peers revoked: told to onRevoke after the lock
}

// arrival is a receiver's report (kindArrived) to hand to the scheduler
// after the lock.
type arrival struct {
	peer   int
	region uint64
	ns     uint64
}

// pullItem is a matched pull-rendezvous to carry out after the lock.
type pullItem struct {
	peer int
	r    *Request
	addr uint64
}

func (o *outbox) addPull(peer int, r *Request, addr uint64) {
	o.pulls = append(o.pulls, pullItem{peer, r, addr})
}

type outItem struct {
	peer int
	pkt  *sched.Packet
}

func (o *outbox) add(peer int, c *ctrl) { o.addPacket(peer, &c.pkt) }

func (o *outbox) addPacket(peer int, p *sched.Packet) {
	if o.n < len(o.items) {
		o.items[o.n] = outItem{peer, p}
		o.n++
		return
	}
	o.more = append(o.more, outItem{peer, p})
}

func (o *outbox) flush(e *Engine) {
	for i := 0; i < o.n; i++ {
		e.sched.Submit(o.items[i].peer, o.items[i].pkt)
	}
	for _, it := range o.more {
		e.sched.Submit(it.peer, it.pkt)
	}
	for _, a := range o.arrivals {
		e.sched.Arrived(a.peer, a.region, float64(a.ns))
	}
	for _, key := range o.revokes {
		e.revokedByPeer(key)
	}
	for _, p := range o.pulls {
		if !e.startPull(p.r) {
			continue // withdrawn by its sender, or its peer lost, meanwhile
		}
		var err error
		if p.r.vec {
			// One read scattered over the segments the message fills.
			err = e.sched.PullV(p.peer, subSegs(p.r.segs, 0, p.r.expect), p.addr)
		} else {
			err = e.sched.Pull(p.peer, p.r.buf[:p.r.expect], p.addr)
		}
		if errors.Is(err, driver.ErrPeerGone) {
			e.PeerLost(p.peer, err) // fails p.r too: no push can come
			continue
		}
		e.pullDone(p.peer, p.r, err)
	}
}

// startPull marks r's read of its sender's memory begun, unless the
// matched send was withdrawn (or r failed) since it matched: from here a
// withdraw is refused, so the sender never reuses a buffer being read.
func (e *Engine) startPull(r *Request) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.regions[r.id] == r && r.move(evPullStart)
}

// ctrl is a pooled control entry (CTS, Credit, Cancel) in flight.
type ctrl struct {
	pkt sched.Packet
	buf [maxHeaderLen]byte
}

var ctrlPool = sync.Pool{New: func() any {
	c := &ctrl{}
	c.pkt.Kind = sched.Eager
	c.pkt.Owner = c
	return c
}}

func newCtrl() *ctrl { return ctrlPool.Get().(*ctrl) }

// Sent recycles the control entry once it has left.
func (c *ctrl) Sent(*sched.Packet, error) {
	c.pkt.Head = nil
	ctrlPool.Put(c)
}

// Idle forwards a rail's idle event to the scheduler.
func (e *Engine) Idle(r driver.Rail, err error) { e.sched.Idle(r, err) }
