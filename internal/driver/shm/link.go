package shm

import (
	"fmt"
	"slices"

	"github.com/commtune/commtune/internal/driver"
)

// Rings are linked on first use (docs/wire-shm.md, "Linking"): a segment
// is created with a ring for every local sender, but a ring gets its
// memory, and its consumer starts polling it, only when its sender first
// writes to it — and its data gets more memory only as its traffic needs
// (ring.reserve). Memory and polling thus grow with the pairs that talk,
// not with the square of the ranks on the node.

// link makes our ring in the peer's segment ready at its first use: it
// gives the ring's header page and first step of data memory (populate,
// ring.startSmall), then marks it linked in the
// peer's segment, where the peer's consumer finds it and starts polling it
// (Transport.refreshLive). A pair that never talks never pays for its
// ring, and no consumer polls rings nobody writes. A ring that cannot get
// its memory fails the rail, with the reason.
func (rl *rail) link() error {
	if rl.linked.Load() {
		return nil
	}
	rl.linkMu.Lock()
	defer rl.linkMu.Unlock()
	if rl.linked.Load() {
		return nil
	}
	if err := rl.failure(); err != nil {
		return err
	}
	if err := rl.prepareRing(); err != nil {
		return err
	}
	rl.seg.setLinkState(rl.index, linkReady)
	rl.linked.Store(true)
	return nil
}

// prepareRing gives our ring in the peer's segment its header page and
// first step of data memory, and makes out and fb.
func (rl *rail) prepareRing() error {
	hdr, data := rl.seg.ringBlock(rl.index)
	if err := populate(hdr); err != nil {
		return rl.allocFailed(err)
	}
	out := newRing(hdr, data)
	out.useBudget(rl.seg.budget())
	if !out.startSmall() {
		return rl.allocFailed(out.fault)
	}
	rl.out, rl.fb = out, newFbox(hdr)
	return nil
}

// allocFailed fails the rail for want of shared memory, saying where.
func (rl *rail) allocFailed(err error) error {
	err = fmt.Errorf("shm: allocating the ring to rank %d (is %s full?): %w", rl.peer, rl.t.cfg.Dir, err)
	rl.fail(err)
	return rl.failure()
}

// outFault fails the rail if its ring could not get memory for a record,
// and returns the rail's failure.
func (rl *rail) outFault() error {
	if rl.q != nil || !rl.linked.Load() {
		return rl.failure() // no ring written
	}
	rl.pmu.Lock()
	f := rl.out.fault
	rl.pmu.Unlock()
	if f != nil {
		return rl.allocFailed(f)
	}
	return rl.failure()
}

// liveRings returns the rings to poll: those linked so far. It looks at
// the segment's links word, one load, and brings the list up to date when
// a sender linked a ring or said goodbye since the last look.
func (t *Transport) liveRings() []*inRing {
	if t.linksChanged() {
		t.refreshLive()
	}
	return *t.live.Load()
}

// linksChanged reports whether a sender linked a ring or said goodbye
// since the live list was last brought up to date: to a consumer about to
// sleep, that is news like a record.
func (t *Transport) linksChanged() bool {
	return t.in.word32(offLinks).Load() != t.linksSeen.Load()
}

// refreshLive adds the rings linked since the last look to the live list,
// and reports the goodbyes of senders that never linked theirs, as a Bye
// record would.
func (t *Transport) refreshLive() {
	var byes []*rail
	t.liveMu.Lock()
	n := t.in.word32(offLinks).Load() // before the states: a later change bumps it again
	live := *t.live.Load()
	grown := false
	for _, ir := range t.rings {
		st := t.in.linkState(ir.index)
		if st&linkReady != 0 && !ir.linked.Load() {
			t.openRing(ir)
			live = append(slices.Clip(live), ir)
			grown = true
		}
		if st&linkBye != 0 && st&linkReady == 0 && !ir.bye && ir.rail != nil {
			ir.bye = true
			byes = append(byes, ir.rail)
		}
	}
	if grown {
		t.live.Store(&live)
	}
	t.linksSeen.Store(n)
	t.liveMu.Unlock()
	for _, rl := range byes {
		rl.byeSeen.Store(true)
		if rl.lost.CompareAndSwap(false, true) {
			err := fmt.Errorf("shm: %w", driver.ErrPeerClosed)
			rl.fail(err)
			t.cfg.Handler.PeerLost(rl.peer, err)
		}
	}
}

// openRing maps a ring its sender linked and makes the consumer's view
// of it (under liveMu).
func (t *Transport) openRing(ir *inRing) {
	hdr, data := t.in.ringBlock(ir.index)
	populate(hdr) // the sender gave it memory; the data is mapped as it fills (ring.peek)
	ir.r, ir.fb = newRing(hdr, data), newFbox(hdr)
	ir.r.account = &t.shared
	ir.r.mapPopulated() // what is there already: newRing loaded the tail
	t.shared.Add(pageSize)
	ir.linked.Store(true)
}

// linkIn starts polling the fast box whose sender announced it through
// the queue (a Link record); its ring is opened with it, and stays empty.
func (t *Transport) linkIn(ir *inRing) {
	t.liveMu.Lock()
	defer t.liveMu.Unlock()
	if ir.linked.Load() {
		return
	}
	t.openRing(ir)
	live := append(slices.Clip(*t.live.Load()), ir)
	t.live.Store(&live)
}

// SharedMemory returns the bytes of shared memory this rank's inbound
// segment holds: its header and queue pages, its fragment pool's memory,
// and for each peer with a ring to it, a ring header page and the part of the ring's data its
// traffic has needed (ring.reserve), up to the whole ring. Summed
// over the ranks of a node, it is the node's shared memory. It reads no
// shared memory, so it is safe during and after Close.
func (t *Transport) SharedMemory() int64 {
	if t.in == nil {
		return 0
	}
	n := int64(headerPages) + t.shared.Load()
	if t.pool != nil {
		n += t.pool.bytes()
	}
	return n
}
