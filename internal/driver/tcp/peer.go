package tcp

import (
	"errors"
	"sync/atomic"

	"github.com/commtune/commtune/internal/driver"
)

// peer is one remote rank and its rails.
type peer struct {
	rank  int
	rails []*rail // by rail index; guarded by Transport.mu while the mesh forms
	// reserved marks rails an accepted handshake holds until it registers
	// (guarded by Transport.mu).
	reserved []bool
	// view is what Rails returns: set once every rail is up.
	view atomic.Pointer[[]driver.Rail]
	// gone is why the peer can no longer be reached (it wraps
	// driver.ErrPeerClosed after a Bye); nil while it can. Set once.
	gone atomic.Pointer[error]
	// skipped: another transport reaches this rank (guarded by Transport.mu).
	skipped bool
	// byes counts the rails that brought the peer's Bye.
	byes atomic.Int32
}

// errSkipped rejects a connection from a rank another transport reaches.
var errSkipped = errors.New("reached by another transport")

// err returns why the peer is unreachable, or nil.
func (p *peer) err() error {
	if e := p.gone.Load(); e != nil {
		return *e
	}
	return nil
}

// peerDown records that p is unreachable because of err and reports it to
// the Handler, exactly once per peer however many rails notice. A peer lost
// for any reason other than an orderly close has all its rails dropped: a
// peer is either reachable on every rail or not at all. It must not be
// called while holding a rail's read lock, except for an orderly close. Nothing is reported
// once Close has begun: the core asked for the shutdown.
func (t *Transport) peerDown(p *peer, err error) {
	if !p.gone.CompareAndSwap(nil, &err) {
		return
	}
	if !errors.Is(err, driver.ErrPeerClosed) {
		t.mu.Lock()
		rails := append([]*rail(nil), p.rails...)
		t.mu.Unlock()
		for _, r := range rails {
			if r != nil {
				r.fail(err)
			}
		}
		// Another rail may be copying a chunk into a receive buffer that
		// the loss is about to complete with an error: wait until no one
		// reads any of the peer's rails (a closed connection admits no new
		// reader), so that a failed receive's buffer is never written to
		// after it is returned.
		for _, r := range rails {
			if r != nil {
				r.rmu.Lock()
				r.rmu.Unlock()
			}
		}
	}
	if t.ctx.Err() != nil {
		return
	}
	t.log.Debug("tcp: peer down", "rank", p.rank, "err", err)
	t.h.PeerLost(p.rank, err)
}
