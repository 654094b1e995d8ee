package tcp

import (
	"errors"
	"fmt"
	"io"

	"github.com/commtune/commtune/internal/driver"
)

// errNoBye is how a peer that closed its connection without saying Bye
// first (a crash, a kill) is reported.
var errNoBye = fmt.Errorf("connection closed without Bye: %w", io.EOF)

// errAfterBye is the cause recorded when a connection closes normally after
// the peer's Bye.
var errAfterBye = fmt.Errorf("closed after Bye: %w", driver.ErrPeerClosed)

// readLoop is the rail's reader goroutine: it delivers frames until the
// connection ends, then works out what the end means.
func (r *rail) readLoop() {
	defer r.t.wg.Done()
	defer close(r.rdone)
	d := newDecoder(r.nc, r.t.h, r.p.rank, r.t.cfg.MaxPacket)
	for {
		kind, err := d.next()
		if err != nil {
			r.readEnded(err, d.bye)
			return
		}
		if kind == kindBye {
			// The peer finalized: no more Posts to it, and our write side
			// shuts once the frame in flight (if any) is out, which is the
			// peer's cue that it may close without destroying our data.
			r.t.peerDown(r.p, fmt.Errorf("tcp rail %d: %w", r.index, driver.ErrPeerClosed))
			r.finish(jobShut)
		}
	}
}

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
