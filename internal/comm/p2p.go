package comm

import (
	"context"

	"github.com/commtune/commtune/internal/core"
)

// Send sends buf to rank dest of c with tag and returns when buf may be
// reused (commtune.Comm.Send).
func (c *Comm) Send(ctx context.Context, buf []byte, dest, tag int) error {
	if err := c.Check(); err != nil {
		return err
	}
	r, err := c.isendTemp(buf, dest, tag, c.ctx, false)
	if err != nil {
		return err
	}
	_, err = c.block(ctx, r)
	c.ep.Eng.Release(r)
	return err
}

// Recv receives into buf a message from rank src of c (or AnySource) with
// tag (or AnyTag). A longer message fills buf and returns an error wrapping
// core.ErrTruncate. If ctx ends before a message matches, the receive is
// withdrawn and ctx.Err() returned.
func (c *Comm) Recv(ctx context.Context, buf []byte, src, tag int) (Status, error) {
	if err := c.Check(); err != nil {
		return Status{}, err
	}
	r, err := c.irecvTemp(buf, src, tag, c.ctx)
	if err != nil {
		return Status{}, err
	}
	st, err := c.block(ctx, r)
	c.ep.Eng.Release(r)
	return st, err
}

// Isend starts sending buf to rank dest with tag.
func (c *Comm) Isend(buf []byte, dest, tag int) (*core.Request, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	return c.isend(buf, dest, tag, c.ctx)
}

// Irecv starts receiving into buf a message from src (or AnySource) with
// tag (or AnyTag).
func (c *Comm) Irecv(buf []byte, src, tag int) (*core.Request, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	return c.irecv(buf, src, tag, c.ctx)
}

// Ssend sends buf to rank dest with tag in synchronous mode: it returns
// once the receiver has matched the message with a receive. If ctx ends
// first, the send is withdrawn when it still can be.
func (c *Comm) Ssend(ctx context.Context, buf []byte, dest, tag int) error {
	if err := c.checkSend(dest, tag); err != nil {
		return err
	}
	r := c.ep.Eng.IssendTemp(c.ctx, c.group[dest], tag, buf)
	_, err := c.block(ctx, r)
	c.ep.Eng.Release(r)
	return err
}

// Issend starts a synchronous send of buf to rank dest with tag: the
// request completes once the receiver has matched it.
func (c *Comm) Issend(buf []byte, dest, tag int) (*core.Request, error) {
	if err := c.checkSend(dest, tag); err != nil {
		return nil, err
	}
	return c.ep.Eng.Issend(c.ctx, c.group[dest], tag, buf), nil
}

// Sendrecv sends sendBuf to dest and receives into recvBuf from src at the
// same time; the buffers may overlap.
func (c *Comm) Sendrecv(ctx context.Context, sendBuf []byte, dest, sendTag int, recvBuf []byte, src, recvTag int) (Status, error) {
	if err := c.Check(); err != nil {
		return Status{}, err
	}
	if err := checkTag(sendTag, false, "send"); err != nil {
		return Status{}, err // before the receive is posted
	}
	if Overlap(sendBuf, recvBuf) {
		// In place: the receive may land before the send has read its
		// buffer, so the send takes a copy first.
		sendBuf = append([]byte(nil), sendBuf...)
	}
	rr, err := c.irecvTemp(recvBuf, src, recvTag, c.ctx)
	if err != nil {
		return Status{}, err
	}
	sr, err := c.isendTemp(sendBuf, dest, sendTag, c.ctx, false)
	if err != nil {
		c.block(context.Background(), withdrawn(rr))
		c.ep.Eng.Release(rr)
		return Status{}, err
	}
	_, serr := c.block(ctx, sr)
	st, rerr := c.block(ctx, rr)
	c.ep.Eng.Release(sr)
	c.ep.Eng.Release(rr)
	if serr != nil {
		return st, serr
	}
	return st, rerr
}

// Probe waits until a message from src with tag can be received and
// describes it.
func (c *Comm) Probe(ctx context.Context, src, tag int) (Status, error) {
	w, err := c.checkRecv(src, tag)
	if err != nil {
		return Status{}, err
	}
	st, err := c.ep.Eng.Probe(ctx, c.ctx, w, tag)
	return c.Status(st), err
}

// Iprobe reports whether a message from src with tag can be received now.
func (c *Comm) Iprobe(src, tag int) (Status, bool, error) {
	w, err := c.checkRecv(src, tag)
	if err != nil {
		return Status{}, false, err
	}
	st, ok, err := c.ep.Eng.Iprobe(c.ctx, w, tag)
	return c.Status(st), ok, err
}

// withdrawn cancels r (a receive not yet matched) and returns it.
func withdrawn(r *core.Request) *core.Request {
	r.Cancel()
	return r
}

// isendTemp sends with a pooled request; pull asks that the receiver
// read buf in place where it can (core.Engine.IsendPulled).
func (c *Comm) isendTemp(buf []byte, dest, tag int, ctxID uint64, pull bool) (*core.Request, error) {
	if err := c.checkSend(dest, tag); err != nil {
		return nil, err
	}
	if pull {
		return c.ep.Eng.IsendPulled(ctxID, c.group[dest], tag, buf), nil
	}
	return c.ep.Eng.IsendTemp(ctxID, c.group[dest], tag, buf), nil
}

func (c *Comm) irecvTemp(buf []byte, src, tag int, ctxID uint64) (*core.Request, error) {
	w, err := c.checkRecv(src, tag)
	if err != nil {
		return nil, err
	}
	return c.ep.Eng.IrecvTemp(ctxID, w, tag, buf), nil
}

func (c *Comm) checkSend(dest, tag int) error {
	if err := c.Check(); err != nil {
		return err
	}
	if _, err := c.toWorld(dest, "destination"); err != nil {
		return err
	}
	return checkTag(tag, false, "send")
}

func (c *Comm) checkRecv(src, tag int) (int, error) {
	if err := c.Check(); err != nil {
		return 0, err
	}
	w, err := c.toWorld(src, "source")
	if err != nil {
		return 0, err
	}
	if src == AnySource {
		if err := c.unacknowledged(); err != nil {
			return 0, err
		}
	}
	return w, checkTag(tag, true, "receive")
}

func (c *Comm) isend(buf []byte, dest, tag int, ctxID uint64) (*core.Request, error) {
	if err := c.checkSend(dest, tag); err != nil {
		return nil, err
	}
	return c.ep.Eng.Isend(ctxID, c.group[dest], tag, buf), nil
}

func (c *Comm) irecv(buf []byte, src, tag int, ctxID uint64) (*core.Request, error) {
	w, err := c.checkRecv(src, tag)
	if err != nil {
		return nil, err
	}
	return c.ep.Eng.Irecv(ctxID, w, tag, buf), nil
}

// block waits for r as a blocking call does: if ctx ends first, r is
// withdrawn if it still can be; otherwise the transfer already under way
// finishes (or fails with its peer) first.
func (c *Comm) block(ctx context.Context, r *core.Request) (Status, error) {
	st, err := r.Wait(ctx)
	if _, done, _ := r.Test(); !done {
		if r.Cancel() {
			return Status{}, err
		}
		st, err = r.Wait(context.Background())
	}
	return c.Status(st), err
}

// Status converts the engine's status of a message on c.
func (c *Comm) Status(st core.Status) Status {
	return Status{Source: c.fromWorld(st.Source), Tag: st.Tag, Count: st.Count}
}
