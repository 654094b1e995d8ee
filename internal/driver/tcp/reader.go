package tcp

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/commtune/commtune/internal/driver"
)

// errNoBye is how a peer that closed its connection without saying Bye
// first (a crash, a kill) is reported.
var errNoBye = fmt.Errorf("connection closed without Bye: %w", io.EOF)

// errAfterBye is the cause recorded when a connection closes normally after
// the peer's Bye.
var errAfterBye = fmt.Errorf("closed after Bye: %w", driver.ErrPeerClosed)

// readLoop is the rail's reader goroutine: it feeds the decoder whenever
// the socket is readable until the connection ends, then works out what the
// end means.
func (r *rail) readLoop() {
	defer r.t.wg.Done()
	defer close(r.rdone)
	r.readEnded(r.readFrames(), r.dec.bye)
}

// bye handles the peer's Bye on this rail: our write side shuts once the
// frame in flight (if any) is out, which is the peer's cue that it may
// close without destroying our data. The peer has finalized once every
// rail brought its Bye: until then the other rails may still carry data
// it sent before (a chunk of a split message on a slower rail), so the
// peer is not reported closed at the first one.
func (r *rail) bye() {
	if int(r.p.byes.Add(1)) == len(r.p.rails) {
		r.t.peerDown(r.p, fmt.Errorf("tcp: Bye on every rail: %w", driver.ErrPeerClosed))
	}
	r.finish(jobShut)
}

// Poll delivers whatever has already arrived on the rail, in the calling
// goroutine, without waiting; it implements driver.Poller. A goroutine
// waiting for a message polls instead of parking, so the message's arrival
// wakes no other thread: on a virtual machine that wake-up alone costs more
// than a small-message round trip. If the reader goroutine is reading at
// that moment, Poll returns at once: the message is being delivered anyway.
func (r *rail) Poll() bool {
	if !r.rmu.TryLock() {
		return false
	}
	progress, err := r.pollLocked()
	r.rmu.Unlock()
	// The reader goroutine backed off while we held the lock: input that
	// arrived after our last read is ours to drain.
	for err == nil && r.contended.Swap(false) {
		if !r.rmu.TryLock() {
			r.contended.Store(true) // the new holder drains
			break
		}
		var more bool
		more, err = r.pollLocked()
		r.rmu.Unlock()
		progress = progress || more
	}
	switch {
	case err == io.EOF || errors.Is(err, errTruncated):
		// The stream ended under us. Its readiness event went to the reader
		// goroutine, which left the input to us and now waits for one that
		// will never come: wake it to handle the end (readFrames).
		r.nc.SetReadDeadline(time.Unix(1, 0))
	case err != nil:
		// A broken stream may bring no further readiness event: close the
		// connection so the reader goroutine wakes and reports it.
		r.fail(err)
	}
	return progress
}

// StartPolling tells the rail that a goroutine is polling it (see
// driver.Poller): the reader goroutine leaves the input to it.
func (r *rail) StartPolling() { r.polling.Add(1) }

// StopPolling ends a StartPolling. Input whose readiness the reader
// goroutine skipped meanwhile is drained here.
func (r *rail) StopPolling(bool) {
	if r.polling.Add(-1) == 0 && r.contended.Load() {
		r.Poll()
	}
}

// Attend does nothing: the reader goroutine parks in the netpoller, which
// costs no wake-up to leave armed.
func (r *rail) Attend() {}

// readEnded handles the end of the incoming stream.
func (r *rail) readEnded(err error, bye bool) {
	if bye && err == io.EOF {
		// Orderly: the peer said Bye then shut its side. Close ours once the
		// writer has shut it.
		<-r.wdone
		r.fail(errAfterBye)
		return
	}
	if cause := r.failure(); cause != nil {
		err = cause // we dropped the connection ourselves; say why
	} else if err == io.EOF {
		err = errNoBye
	}
	r.fail(err)
	if r.t.ctx.Err() != nil {
		return // closing: whatever ends the stream now is expected
	}
	if errors.Is(err, driver.ErrProtocol) {
		r.t.log.Warn(fmt.Sprintf("tcp: dropping connection to rank %d rail %d (%s): %v", r.p.rank, r.index, r.remote, err))
	}
	r.t.peerDown(r.p, fmt.Errorf("tcp rail %d: %w", r.index, err))
}
