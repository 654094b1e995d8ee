package comm

import (
	"context"

	"github.com/commtune/commtune/internal/core"
)

// Point-to-point messages made of several memory regions (what MPI's
// derived datatypes describe, e.g. a strided face of a grid): the message
// is the concatenation of segs, sent and received with no packing copy.
// On the wire it is an ordinary message, so a segmented send matches a
// contiguous receive and the reverse, with the same tags, truncation rule
// (a receive holds the sum of its segments' lengths) and Status.Count.

// IsendSegs starts sending the concatenation of segs to rank dest with
// tag; neither segs nor the memory it points to may change until the
// request completes.
func (c *Comm) IsendSegs(segs [][]byte, dest, tag int) (*core.Request, error) {
	if err := c.checkSend(dest, tag); err != nil {
		return nil, err
	}
	return c.ep.Eng.IsendV(c.ctx, c.group[dest], tag, segs), nil
}

// IrecvSegs starts receiving a message from src (or AnySource) with tag
// (or AnyTag) into segs, in order; segs must not be read or changed until
// the request completes.
func (c *Comm) IrecvSegs(segs [][]byte, src, tag int) (*core.Request, error) {
	w, err := c.checkRecv(src, tag)
	if err != nil {
		return nil, err
	}
	return c.ep.Eng.IrecvV(c.ctx, w, tag, segs), nil
}

// SendSegs is Send of the concatenation of segs.
func (c *Comm) SendSegs(ctx context.Context, segs [][]byte, dest, tag int) error {
	if err := c.checkSend(dest, tag); err != nil {
		return err
	}
	r := c.ep.Eng.IsendVTemp(c.ctx, c.group[dest], tag, segs)
	_, err := c.block(ctx, r)
	c.ep.Eng.Release(r)
	return err
}

// RecvSegs is Recv into segs, in order: a message longer than their total
// length fills them and returns an error wrapping core.ErrTruncate.
func (c *Comm) RecvSegs(ctx context.Context, segs [][]byte, src, tag int) (Status, error) {
	w, err := c.checkRecv(src, tag)
	if err != nil {
		return Status{}, err
	}
	r := c.ep.Eng.IrecvVTemp(c.ctx, w, tag, segs)
	st, err := c.block(ctx, r)
	c.ep.Eng.Release(r)
	return st, err
}
