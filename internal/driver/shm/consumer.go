package shm

import (
	"fmt"
	"runtime"
	"time"

	"github.com/commtune/commtune/internal/driver"
)

// attentiveWait is how long the consumer sleeps, unrung, after one of its
// process's waits ended with its message (docs/wire-shm.md, "Waking"):
// records arriving meanwhile are most often taken by the process's next
// wait, microseconds later, and otherwise by the consumer when it wakes.
// Ringing for each of them cost a futex wake-up per message, and the
// woken consumer took a processor from a polling rank: collectives between
// two ranks on two processors were bimodal (4 µs, or 15–35 µs).
const attentiveWait = 500 * time.Microsecond

// consume is the consumer goroutine: it drains the rings while nobody
// polls, and otherwise sleeps on the owner's bell (bell_linux.go), which producers ring
// only when it sleeps and no poller is at work, and, while the process is
// attentive, only when the consumer sleeps with no timeout. Announcing
// sleep, then checking the rings once more, then sleeping (and producers
// committing, then checking for sleepers) means no record is left unseen,
// or unseen for longer than attentiveWait.
func (t *Transport) consume() {
	defer t.wg.Done()
	sleepers, polling := t.in.word32(offSleepers), t.in.word32(offPolling)
	attentive, untimed, rung := t.in.word32(offAttentive), t.in.word32(offUntimed), t.in.word32(offRung)
	seen := t.activity.Load()
	var seenAt time.Time // when seen last changed (zero: not yet)
	for !t.closing.Load() {
		if polling.Load() == 0 && t.drainAll() {
			// Let the goroutines just completed run before draining again:
			// their waits are what the process is for. (When the consumer
			// slept in a raw futex system call, they stayed on its P until
			// the monitor noticed, 20 µs or more: 8 ranks on 2 cores
			// passing a token took 57 µs per hop without this.)
			runtime.Gosched()
			continue
		}
		sleepers.Add(1)
		var d time.Duration
		if attentive.Load() != 0 {
			now := time.Now()
			if a := t.activity.Load(); a != seen || now.Sub(seenAt) < attentiveWait {
				// Waits ended with their messages since the last look, or
				// the last look was less than attentiveWait ago (this
				// sleep ended early: a ring, or a byte left in the bell):
				// stay attentive, the mark up, so producers keep not
				// ringing. Calling the process quiet after a short sleep
				// set untimed, and every message between two waits then
				// rang the bell and woke this goroutine again.
				if a != seen {
					seen, seenAt = a, now
				}
				d = attentiveWait
			} else {
				// None for a whole attentiveWait: the process went quiet.
				attentive.Store(0)
				untimed.Store(1)
			}
		} else {
			untimed.Store(1)
		}
		if t.closing.Load() || (polling.Load() == 0 && t.anyPending()) {
			untimed.Store(0)
			sleepers.Add(^uint32(0))
			continue
		}
		t.bell.sleep(d)
		rung.Store(0) // before the next look at the rings: see rail.ring
		untimed.Store(0)
		sleepers.Add(^uint32(0))
	}
}

func (t *Transport) anyPending() bool {
	if t.linksChanged() || (t.q != nil && !t.qdead.Load() && t.q.pending()) {
		return true
	}
	for _, ir := range *t.live.Load() {
		if ir.r.pending() || ir.fb.pending() {
			return true
		}
	}
	return false
}

// drainAll delivers what every inbound ring holds and reports whether
// anything was delivered.
func (t *Transport) drainAll() bool {
	progress := t.drainQueue()
	for _, ir := range t.liveRings() {
		if t.drain(ir) {
			progress = true
		}
	}
	return progress
}

// drainAllWait is drainAll that waits for a ring another goroutine is
// draining, then drains it after that goroutine.
func (t *Transport) drainAllWait() {
	if t.q != nil {
		t.qmu.Lock()
		t.drainQueueLocked()
		t.qmu.Unlock()
	}
	for _, ir := range t.liveRings() {
		if ir.rail == nil {
			continue
		}
		ir.mu.Lock()
		t.drainLocked(ir)
		ir.mu.Unlock()
	}
}

// drain delivers every record of one ring, unless another goroutine holds
// it (it is draining it then). A record that breaks the format, or that the
// core rejects, loses the peer.
func (t *Transport) drain(ir *inRing) bool {
	if ir.rail == nil || !ir.mu.TryLock() {
		return false
	}
	defer ir.mu.Unlock()
	return t.drainLocked(ir)
}

// drainLocked is drain with ir.mu held: the fast box, then the ring,
// taking the box in again before each ring record (see rail.SendNow). A
// record that breaks the format, or that the core rejects, loses the peer.
func (t *Transport) drainLocked(ir *inRing) bool {
	progress := false
	for {
		more, err := t.drainFbox(ir)
		progress = progress || more
		var rec []byte
		if err == nil {
			rec, err = ir.r.peek()
			if err == nil && rec == nil {
				return progress
			}
		}
		if err == nil {
			err = t.handle(ir.rail, rec)
		}
		if err != nil {
			t.protocolError(ir.rail, err)
			return progress
		}
		ir.r.release(rec)
		progress = true
	}
}

// drainFbox delivers every record of ir's fast box (ir.mu held).
func (t *Transport) drainFbox(ir *inRing) (bool, error) {
	progress := false
	for {
		body, lines, err := ir.fb.next()
		if err != nil || body == nil {
			return progress, err
		}
		if err := t.cfg.Handler.Packet(ir.rail.peer, body); err != nil {
			return progress, err
		}
		ir.fb.release(lines)
		progress = true
	}
}

// handle delivers one record from rl's peer.
func (t *Transport) handle(rl *rail, rec []byte) error {
	h := t.cfg.Handler
	switch rec[4] {
	case kindPacket:
		return h.Packet(rl.peer, rec[recHeader:])
	case kindPut:
		pad := int(rec[5])
		if len(rec) < recHeader+putFields+pad || pad >= payloadAln {
			return driver.ProtocolError("shm Put record of %d bytes with pad %d", len(rec), pad)
		}
		region, offset := le.Uint64(rec[8:]), le.Uint64(rec[16:])
		payload := rec[recHeader+putFields+pad:]
		if offset > 1<<62 {
			return driver.ProtocolError("shm Put offset %d", offset)
		}
		n, cacheFree := len(payload), rec[6]&putCacheFree != 0
		err := driver.Place(h, rl.peer, region, int64(offset), n, func(dst []byte) error {
			if cacheFree {
				copyCacheFree(dst, payload)
			} else {
				copy(dst, payload)
			}
			payload = payload[len(dst):]
			return nil
		})
		if err != nil {
			return err
		}
		h.PutDone(rl.peer, region, int64(offset), n)
	case kindPipePut:
		if len(rec) != recHeader+16 {
			return driver.ProtocolError("shm pipe record of %d bytes", len(rec))
		}
		return rl.readPipe(le.Uint64(rec[8:]), le.Uint64(rec[16:]), le.Uint64(rec[24:]))
	case kindPipeAck:
		return rl.pipeAcked(le.Uint64(rec[8:]))
	case kindBye:
		rl.byeSeen.Store(true)
		if rl.lost.CompareAndSwap(false, true) {
			err := fmt.Errorf("shm: %w", driver.ErrPeerClosed)
			rl.fail(err)
			h.PeerLost(rl.peer, err)
		}
	default:
		return driver.ProtocolError("shm record of unknown kind %d", rec[4])
	}
	return nil
}

func (t *Transport) protocolError(rl *rail, err error) {
	rl.refused.Store(true)
	if !rl.lost.CompareAndSwap(false, true) {
		return
	}
	t.log.Warn(fmt.Sprintf("shm: dropping rank %d: %v", rl.peer, err))
	rl.fail(err)
	t.cfg.Handler.PeerLost(rl.peer, fmt.Errorf("shm: %w", err))
}

// Poll delivers what the inbound rings hold, in the calling goroutine
// (driver.Poller). Shared-memory rings cost one load each to check, so
// every ring is polled, whichever peer the caller waits for.
func (rl *rail) Poll() bool { return rl.t.drainAll() }

// PollGroup names the transport: every rail's Poll takes in the whole
// inbound segment (driver.PollGroup).
func (rl *rail) PollGroup() any { return rl.t }

// SelfPolled says that Poll delivers the rings' input whole
// (driver.SelfPolled).
func (rl *rail) SelfPolled() bool { return true }

// StartPolling tells producers not to wake the consumer goroutine: a
// poller will see their records (and receive them on its own processor).
func (rl *rail) StartPolling() { rl.t.in.word32(offPolling).Add(1) }

// StopPolling ends StartPolling. A producer that skipped the wake while we
// polled committed before we stopped: the last poller drains once more,
// waiting for a ring another goroutine drains (drainAllWait) — giving up
// on it, as a poll does, can leave a record that goroutine had already
// looked past, with the consumer asleep and nobody to ring it (the wake
// model's lost records, wake_model_test.go).
// An attentive stop marks the process attentive (the consumer clears the
// mark when it sleeps on it); a waiter about to park clears it, so that
// its message rings the bell.
func (rl *rail) StopPolling(attentive bool) {
	if attentive {
		rl.Attend()
	} else if a := rl.t.in.word32(offAttentive); a.Load() != 0 {
		a.Store(0)
	}
	if rl.t.in.word32(offPolling).Add(^uint32(0)) == 0 {
		rl.t.drainAllWait()
	}
}

// Attend marks the process attentive and counts one more wait ended with
// its message, for the consumer to see that the process is still busy.
func (rl *rail) Attend() {
	rl.t.activity.Add(1)
	if a := rl.t.in.word32(offAttentive); a.Load() == 0 {
		a.Store(1)
	}
}
