package shm

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// The inbound queue path (docs/wire-shm.md, "Inbound queue"): on a node
// with many ranks a pair talks through the receiver's inbound queue
// (fifo.go), each record in a fragment of the sender's pool, and gets a
// fast box of its own (the upper half of its ring's header page; the
// ring's data stays unused) only once it proves busy, while the receiver
// has boxes to give, as Open MPI's vader does (a fast box for a peer from
// its 16th message, at most 32 per receiver). A node whose every rank
// talks to every other thus holds a pool per rank, not a ring per pair.

// QueueMode says whether pairs start on the inbound queue.
type QueueMode int

const (
	// QueueAuto uses the queue on nodes of more than QueueRanks ranks.
	QueueAuto QueueMode = iota
	// QueueOn uses it on every node.
	QueueOn
	// QueueOff gives every pair its ring from its first record.
	QueueOff
)

// QueueModeOf returns the mode a configuration names ("on", "off"; any
// other, "auto" or "" included, is QueueAuto: config checks the names).
func QueueModeOf(name string) QueueMode {
	switch name {
	case "on":
		return QueueOn
	case "off":
		return QueueOff
	}
	return QueueAuto
}

const (
	// QueueRanks is the most ranks on a node QueueAuto gives rings from
	// the first record: up to 16 ranks a ring per pair that talks costs
	// little, and a pair's ring and fast box are its fastest path.
	QueueRanks = 16
	// fragSlotSize is a large fragment's size, header included, as
	// vader's largest (max_send_size): on the queue path the largest
	// packet is what it carries, so that an eager message of up to 32 KiB
	// takes one visit of the receiver (a rendezvous takes two or three:
	// on a node with more ranks than processors, each one a turn).
	fragSlotSize = 32 << 10
	// smallFragSize is a small fragment's size, header included: most
	// records (a rendezvous's request, answer and end, small messages)
	// are a few dozen bytes, and a burst of them to every peer (an
	// all-to-all's requests) took a 4 KiB fragment each.
	smallFragSize = 256
	// DefaultPoolSlots is the most large fragments a rank's pool grows
	// to, and smallPerLarge times as many small ones: what it may have in
	// flight to all its peers at once (2 MiB and 1 MiB).
	DefaultPoolSlots = 64
	smallPerLarge    = 64
	// smallStep is how many small fragments the pool gets memory for at
	// a time: a page.
	smallStep = pageSize / smallFragSize
	// maxPoolSlots bounds a pool a segment header may claim.
	maxPoolSlots = 4096
	// poolStep is how many large fragments the pool gets memory for at a
	// time, when every fragment it has is out.
	poolStep = 2
	// busyRecords is how many records a pair sends through the queue
	// before it asks for a fast box of its own (vader links a fast box at
	// a peer's 16th message).
	busyRecords = 16
	// maxFastBoxes is how many of its senders a receiver gives fast
	// boxes on the queue path, first come, first served.
	maxFastBoxes = 16
	// kindLink (a queue record, no body): the sender's small packets may
	// come by its fast box from now on; the receiver starts polling the
	// box when it takes the record.
	kindLink = 7
)

// outPool is this rank's fragment pool as its sender: which slots of
// each size are free, and how many have memory. Small slots come first in
// the pool and in its numbering.
type outPool struct {
	mu    sync.Mutex
	frags fragPool // our pool, in our segment
	small *fragSlots
	large *fragSlots
	self  int // our local index: our fragments' owner
}

func newOutPool(frags fragPool, self int) *outPool {
	return &outPool{frags: frags, small: newFragSlots(0), large: newFragSlots(0), self: self}
}

// take returns a free fragment for a record of n bytes, giving the pool
// memory for more when every fragment of its size is out and the pool
// may grow; a small record takes a large fragment when the small ones
// are all out and cannot grow. ok is false when none is free.
func (p *outPool) take(n int) (slot int, ok bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n <= smallFragSize-fragHeader && p.frags.small > 0 {
		if s, ok, err := p.takeFrom(p.small, p.frags.small, smallStep, 0, smallFragSize); ok || err != nil {
			return s, ok, err
		}
	}
	return p.takeFrom(p.large, p.frags.slots()-p.frags.small, poolStep, p.frags.small, fragSlotSize)
}

// takeFrom is take for one size: slots, of at most limit, numbered from
// base in the pool, growing step at a time (mu held).
func (p *outPool) takeFrom(slots *fragSlots, limit, step, base, size int) (int, bool, error) {
	if s, ok := slots.take(); ok {
		return base + s, true, nil
	}
	have := slots.size()
	if have >= limit {
		return 0, false, nil
	}
	k := min(step, limit-have)
	off, _ := p.frags.span(base + have)
	if err := populate(p.frags.mem[off : off+k*size]); err != nil {
		return 0, false, err
	}
	slots.grow(k)
	s, _ := slots.take()
	return base + s, true, nil
}

// give takes a fragment back from a receiver.
func (p *outPool) give(slot int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if slot < p.frags.small {
		return p.small.give(slot)
	}
	return p.large.give(slot - p.frags.small)
}

// bytes returns the memory the pool holds.
func (p *outPool) bytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int64(poolBytes(p.small.size(), p.large.size()))
}

// onQueue reports whether records to the peer go through its inbound
// queue: both ends have a pool. Only small packets sent at once
// (SendNow) take the pair's fast box instead, once linked.
func (rl *rail) onQueue() bool { return rl.q != nil }

// queueRecord writes one record through the peer's inbound queue: fill
// writes it (its header included) into a fragment of our pool and
// returns its length. It returns false when no fragment is free (the
// caller waits with waitFragment, without pmu). The caller holds pmu, so
// that the pair's records keep their order and none follows a Link.
func (rl *rail) queueRecord(fill func(w []byte) int, n int) (bool, error) {
	p := rl.t.pool
	if n > fragSlotSize-fragHeader {
		return false, fmt.Errorf("shm rail to rank %d: a record of %d bytes exceeds a fragment's %d", rl.peer, n, fragSlotSize-fragHeader)
	}
	slot, ok, err := p.take(n)
	if err != nil {
		return false, rl.allocFailed(err)
	}
	if !ok {
		return false, nil
	}
	m := fill(p.frags.payload(slot)[:n])
	if err := rl.q.push(makeFragRef(p.self, slot), m); err != nil {
		return false, rl.t.queueCorrupt(rl, err)
	}
	return true, nil
}

// waitFragment waits a little for one of our fragments to come back: it
// takes in what reaches us (the returns come through our own queue, and
// a peer may be waiting for us to take its records before it returns
// ours), briefly, then sleeps.
func (rl *rail) waitFragment() {
	for i := 0; i < 64; i++ {
		if rl.t.drainAll() {
			return
		}
		runtime.Gosched()
	}
	time.Sleep(50 * time.Microsecond)
}

// writeQueued writes a record through the queue (writeRecord), first
// linking the pair's fast box if the pair has earned one.
func (rl *rail) writeQueued(fill func(w []byte) int, n int) bool {
	rl.pmu.Lock()
	if !rl.linked.Load() && rl.askBox() {
		if _, err := rl.linkQueuedLocked(); err != nil {
			rl.pmu.Unlock()
			return false
		}
	}
	ok, err := rl.queueRecord(fill, n)
	rl.pmu.Unlock()
	if err != nil {
		rl.fail(err)
		return false
	}
	if ok {
		rl.ring()
	}
	return ok
}

// queuePad pads a Put record in a fragment so that its payload starts on
// a cache line (slots are page-aligned).
const queuePad = (payloadAln - (fragHeader+recHeader+putFields)%payloadAln) % payloadAln

// queueChunk writes the next chunk of a Put through the queue, as much as
// one fragment carries: a large message on the queue path streams through
// the sender's pool, with no ring, as through vader's fragments. It
// reports false when no fragment is free.
func (rl *rail) queueChunk(st *putState) (bool, error) {
	if len(st.iov) == 0 {
		return true, nil
	}
	n := st.chunkLen(fragSlotSize - fragHeader - recHeader - putFields - queuePad)
	size := recHeader + putFields + queuePad + n
	rl.pmu.Lock()
	ok, err := rl.queueRecord(func(w []byte) int {
		st.putHeader(w, size, queuePad)
		st.gather(w[recHeader+putFields+queuePad : size])
		return size
	}, size)
	rl.pmu.Unlock()
	if ok {
		rl.ring()
	}
	return ok, err
}

// linkQueuedLocked (pmu held) gives the fast box memory (the ring's
// header page), then sends the Link record: the receiver starts polling
// the box when it takes the record, after every earlier one, and takes
// the box in before each later record of the pair from the queue, so
// that no box record falls behind a queue record sent after it.
func (rl *rail) linkQueuedLocked() (bool, error) {
	if rl.fb == nil {
		hdr, _ := rl.seg.ringBlock(rl.index)
		if err := populate(hdr); err != nil {
			return false, rl.allocFailed(err)
		}
		rl.fb = newFbox(hdr)
	}
	ok, err := rl.queueRecord(func(w []byte) int {
		le.PutUint32(w, recHeader)
		w[4] = kindLink
		return recHeader
	}, recHeader)
	if err != nil || !ok {
		return false, err
	}
	rl.linked.Store(true)
	return true, nil
}

// queueCorrupt reports a peer's segment holding what the protocol never
// writes, found while posting to rl's peer or taking in our queue (rl
// nil: no peer to blame). The queue is shared, so every peer is lost.
func (t *Transport) queueCorrupt(rl *rail, err error) error {
	err = fmt.Errorf("shm: inbound queue: %w", err)
	for _, p := range t.peers {
		if p == rl || rl == nil {
			t.protocolError(p, err)
		}
	}
	return err
}

// drainQueue delivers what our inbound queue holds, unless another
// goroutine is taking it in, and reports whether anything came.
func (t *Transport) drainQueue() bool {
	if t.q == nil || t.qdead.Load() || !t.qmu.TryLock() {
		return false
	}
	defer t.qmu.Unlock()
	return t.drainQueueLocked()
}

// drainQueueLocked is drainQueue with qmu held. Our own fragments are
// returns: their slots are free again. Any other is a record from its
// owner, delivered as a ring's would be, then given back to its owner
// through the owner's queue.
func (t *Transport) drainQueueLocked() bool {
	if t.qdead.Load() {
		return false
	}
	progress := false
	for {
		r, payload, ok, err := t.q.pop()
		if err != nil {
			t.qdead.Store(true) // nothing more can be trusted from it
			t.queueCorrupt(nil, err)
			return progress
		}
		if !ok {
			return progress
		}
		progress = true
		if r.owner() == t.pool.self {
			if err := t.pool.give(r.slot()); err != nil {
				t.log.Warn(fmt.Sprintf("shm: inbound queue: %v", err))
			}
			continue
		}
		rl := t.byIndex[r.owner()] // check made sure the owner exists
		if rl == nil || rl.q == nil {
			t.qdead.Store(true)
			t.queueCorrupt(nil, fmt.Errorf("%w: a fragment of rank index %d, which has no pool", errCorruptFifo, r.owner()))
			return progress
		}
		// A peer that exited is lost by now, but what it wrote before
		// is delivered (peerGone drains first), as from a ring.
		if !rl.refused.Load() {
			if err := t.handleQueued(rl, payload); err != nil {
				t.protocolError(rl, err)
			}
		}
		// Give it back, as vader does: the owner finds it in its queue.
		if err := rl.q.push(r, 0); err != nil {
			t.queueCorrupt(rl, err)
		}
	}
}

// handleQueued delivers one record that came through the queue, after
// what the sender's fast box holds.
func (t *Transport) handleQueued(rl *rail, rec []byte) error {
	if ir := rl.in; ir != nil && ir.linked.Load() {
		ir.mu.Lock()
		_, err := t.drainFbox(ir)
		ir.mu.Unlock()
		if err != nil {
			return err
		}
	}
	if len(rec) < recHeader {
		return fmt.Errorf("shm: a fragment of %d bytes, shorter than a record header", len(rec))
	}
	if n := le.Uint32(rec); int(n) != len(rec) {
		return fmt.Errorf("shm: queued record of %d bytes in a fragment of %d", n, len(rec))
	}
	if rec[4] == kindLink {
		if len(rec) != recHeader {
			return fmt.Errorf("shm: link record of %d bytes", len(rec))
		}
		t.linkIn(rl.in)
		return nil
	}
	return t.handle(rl, rec)
}

// askBox reports whether the peer gives us a fast box of our own: the pair
// is busy (busyRecords through the queue) and the peer has not given
// maxFastBoxes yet. It counts the record about to go.
func (rl *rail) askBox() bool {
	if rl.granted {
		return true // granted, but the Link record found no fragment yet
	}
	rl.queued++
	if rl.queued < busyRecords || rl.noBox {
		return false
	}
	w := rl.seg.word32(offQueueBoxes)
	for {
		n := w.Load()
		if n >= maxFastBoxes {
			rl.noBox = true
			return false
		}
		if w.CompareAndSwap(n, n+1) {
			rl.granted = true
			return true
		}
	}
}

// localIndex returns rank's index among the node's ranks in ascending
// order: every rank of the node numbers the pools alike.
func localIndex(local []int, rank int) int {
	i := 0
	for _, r := range local {
		if r < rank {
			i++
		}
	}
	return i
}

// connectQueues (Connect, every peer's segment mapped) makes our inbound
// queue and, for each peer whose segment has a pool too, its queue: the
// pair starts there. Both see every local pool, by local index.
func (t *Transport) connectQueues() error {
	if t.pool == nil {
		return nil
	}
	pools := make([]fragPool, len(t.cfg.Local))
	t.byIndex = make([]*rail, len(t.cfg.Local))
	pools[t.pool.self] = t.in.pool()
	for _, rl := range t.peers {
		i := localIndex(t.cfg.Local, rl.peer)
		pools[i], t.byIndex[i] = rl.seg.pool(), rl
	}
	var err error
	if t.q, err = newFifo(t.in.queueWords(), pools); err != nil {
		return err
	}
	for _, rl := range t.peers {
		if rl.seg.poolSlots == 0 {
			continue // the peer takes rings only
		}
		if rl.q, err = newFifo(rl.seg.queueWords(), pools); err != nil {
			return err
		}
	}
	return nil
}
