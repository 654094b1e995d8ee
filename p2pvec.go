package commtune

import "context"

// Point-to-point messages made of several memory regions (what MPI's
// derived datatypes describe, e.g. a strided face of a grid): the message
// is the concatenation of segs, sent and received with no packing copy.
// On the wire it is an ordinary message, so a segmented send matches a
// contiguous receive and the reverse, with the same tags, truncation rule
// (a receive holds the sum of its segments' lengths) and Status.Count.

// isendSegs starts sending the concatenation of segs to rank dest with
// tag; neither segs nor the memory it points to may change until the
// request completes.
func (c *Comm) isendSegs(segs [][]byte, dest, tag int) (*Request, error) {
	if err := c.checkSend(dest, tag); err != nil {
		return nil, err
	}
	return &Request{r: c.ep.eng.IsendV(c.ctx, c.group[dest], tag, segs), c: c}, nil
}

// irecvSegs starts receiving a message from src (or AnySource) with tag
// (or AnyTag) into segs, in order; segs must not be read or changed until
// the request completes.
func (c *Comm) irecvSegs(segs [][]byte, src, tag int) (*Request, error) {
	w, err := c.checkRecv(src, tag)
	if err != nil {
		return nil, err
	}
	return &Request{r: c.ep.eng.IrecvV(c.ctx, w, tag, segs), c: c}, nil
}

// sendSegs is Send of the concatenation of segs.
func (c *Comm) sendSegs(ctx context.Context, segs [][]byte, dest, tag int) error {
	if err := c.checkSend(dest, tag); err != nil {
		return err
	}
	r := c.ep.eng.IsendVTemp(c.ctx, c.group[dest], tag, segs)
	_, err := c.block(ctx, r)
	c.ep.eng.Release(r)
	return err
}

// recvSegs is Recv into segs, in order: a message longer than their total
// length fills them and returns an error wrapping ErrTruncate.
func (c *Comm) recvSegs(ctx context.Context, segs [][]byte, src, tag int) (Status, error) {
	w, err := c.checkRecv(src, tag)
	if err != nil {
		return Status{}, err
	}
	r := c.ep.eng.IrecvVTemp(c.ctx, w, tag, segs)
	st, err := c.block(ctx, r)
	c.ep.eng.Release(r)
	return st, err
}
