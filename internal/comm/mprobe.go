package comm

import (
	"context"

	"github.com/commtune/commtune/internal/core"
)

// Mprobe waits until a message from src (or AnySource) with tag (or
// AnyTag) can be received and takes it out of matching (core.Engine.Mprobe).
func (c *Comm) Mprobe(ctx context.Context, src, tag int) (*core.Message, Status, error) {
	w, err := c.checkRecv(src, tag)
	if err != nil {
		return nil, Status{}, err
	}
	m, err := c.ep.Eng.Mprobe(ctx, c.ctx, w, tag)
	if err != nil {
		return nil, Status{}, err
	}
	return m, c.Status(m.Status()), nil
}

// Improbe takes a message from src with tag out of matching if one can be
// received now.
func (c *Comm) Improbe(src, tag int) (*core.Message, Status, bool, error) {
	w, err := c.checkRecv(src, tag)
	if err != nil {
		return nil, Status{}, false, err
	}
	m, ok, err := c.ep.Eng.Improbe(c.ctx, w, tag)
	if !ok || err != nil {
		return nil, Status{}, false, err
	}
	return m, c.Status(m.Status()), true, nil
}

// Imrecv starts receiving the message m took into buf.
func (c *Comm) Imrecv(m *core.Message, buf []byte) (*core.Request, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	return c.ep.Eng.Mrecv(m, buf), nil
}

// Mrecv receives the message m took into buf.
func (c *Comm) Mrecv(ctx context.Context, m *core.Message, buf []byte) (Status, error) {
	r, err := c.Imrecv(m, buf)
	if err != nil {
		return Status{}, err
	}
	return c.block(ctx, r)
}

// RecvAlloc receives a message of any size from src (or AnySource) with
// tag (or AnyTag) into a buffer made at the match, of its size.
func (c *Comm) RecvAlloc(ctx context.Context, src, tag int) ([]byte, Status, error) {
	w, err := c.checkRecv(src, tag)
	if err != nil {
		return nil, Status{}, err
	}
	r := c.ep.Eng.IrecvAlloc(c.ctx, w, tag)
	st, err := c.block(ctx, r)
	return r.Buffer(), st, err
}

// IrecvAlloc starts receiving a message of any size from src (or
// AnySource) with tag (or AnyTag) into a buffer made at the match, of its
// size (core.Request.Buffer).
func (c *Comm) IrecvAlloc(src, tag int) (*core.Request, error) {
	w, err := c.checkRecv(src, tag)
	if err != nil {
		return nil, err
	}
	return c.ep.Eng.IrecvAlloc(c.ctx, w, tag), nil
}
