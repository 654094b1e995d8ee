package comm

import (
	"context"

	"github.com/commtune/commtune/internal/core"
)

// P2P is a send or a receive checked once, for a persistent request
// (commtune's SendInit and RecvInit): its peer is a world rank already,
// its tag and context fixed. Each start takes a request from the
// engine's pool, which End hands back.
type P2P struct {
	c    *Comm
	send bool
	buf  []byte
	peer int // world rank; AnySource for a receive from any
	tag  int
}

// SendInit checks a send of buf to rank dest of c with tag.
func (c *Comm) SendInit(buf []byte, dest, tag int) (*P2P, error) {
	if err := c.checkSend(dest, tag); err != nil {
		return nil, err
	}
	return &P2P{c: c, send: true, buf: buf, peer: c.group[dest], tag: tag}, nil
}

// RecvInit checks a receive into buf from rank src of c (or AnySource)
// with tag (or AnyTag).
func (c *Comm) RecvInit(buf []byte, src, tag int) (*P2P, error) {
	w, err := c.checkRecv(src, tag)
	if err != nil {
		return nil, err
	}
	return &P2P{c: c, buf: buf, peer: w, tag: tag}, nil
}

// Comm returns the communicator of the send or receive.
func (p *P2P) Comm() *Comm { return p.c }

// Describe says whether it is a send, its buffer's bytes and its peer's
// rank in the communicator (AnySource for a receive from any).
func (p *P2P) Describe() (send bool, bytes, peer int) {
	peer = p.peer
	if peer != AnySource {
		peer = p.c.fromWorld(peer)
	}
	return p.send, len(p.buf), peer
}

// Start starts the send or receive with a pooled request: the caller
// waits for it, or cancels it, and hands it back with End once complete.
func (p *P2P) Start() (*core.Request, error) {
	c := p.c
	if err := c.Check(); err != nil {
		return nil, err
	}
	if p.send {
		return c.ep.Eng.IsendTemp(c.ctx, p.peer, p.tag, p.buf), nil
	}
	return c.ep.Eng.IrecvTemp(c.ctx, p.peer, p.tag, p.buf), nil
}

// Wait waits for r, a request of Start, until it completes or ctx ends:
// it reports whether r completed, and then its status and error, having
// handed r back; otherwise r goes on (wait again, or cancel it).
func (p *P2P) Wait(ctx context.Context, r *core.Request) (Status, bool, error) {
	st, err := r.Wait(ctx)
	if _, done, _ := r.Test(); !done {
		return Status{}, false, err
	}
	return p.end(r, st, err)
}

// Test reports whether r, a request of Start, has completed, and then its
// status and error, having handed r back.
func (p *P2P) Test(r *core.Request) (Status, bool, error) {
	st, done, err := r.Test()
	if !done {
		return Status{}, false, nil
	}
	return p.end(r, st, err)
}

// end hands back r, complete with st and err, and returns its status on
// the communicator.
func (p *P2P) end(r *core.Request, st core.Status, err error) (Status, bool, error) {
	p.c.ep.Eng.Release(r)
	return p.c.Status(st), true, err
}
