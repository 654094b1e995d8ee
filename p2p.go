package commtune

import (
	"context"

	"github.com/commtune/commtune/internal/observe"
)

// sourceOf is the rank a receive got its message from: the status's
// source once it matched, else the rank it asked for.
func sourceOf(st Status, src int, err error) int {
	if err != nil && src == AnySource {
		return observe.NoRank
	}
	if err == nil {
		return st.Source
	}
	return src
}

// The calls below check only for a nil communicator: the runtime's own
// calls (comm.Comm.Check) refuse a closed one.

// Send sends buf to rank dest of c with tag (≥ 0) and returns when buf may
// be reused. Small messages are buffered (they may return before the
// receiver posts its receive); large ones wait for the receiver. If ctx ends
// first, Send withdraws the message when it still can and returns ctx.Err();
// once the data is moving it finishes the transfer first.
func (c *Comm) Send(ctx context.Context, buf []byte, dest, tag int) error {
	if c == nil {
		return errNilComm
	}
	t := c.begin(opSend)
	err := c.in.Send(ctx, buf, dest, tag)
	c.endP2P(ctx, t, opSend, len(buf), dest, true, err)
	return err
}

// Recv receives into buf a message from rank src of c (or AnySource) with
// tag (or AnyTag). A longer message fills buf and returns an error wrapping
// ErrTruncate. If ctx ends before a message matches, the receive is
// withdrawn and ctx.Err() returned.
func (c *Comm) Recv(ctx context.Context, buf []byte, src, tag int) (Status, error) {
	if c == nil {
		return Status{}, errNilComm
	}
	t := c.begin(opRecv)
	st, err := c.in.Recv(ctx, buf, src, tag)
	c.endP2P(ctx, t, opRecv, st.Count, sourceOf(st, src, err), false, err)
	return st, err
}

// Isend starts sending buf to rank dest with tag; buf must not change until
// the request completes.
func (c *Comm) Isend(buf []byte, dest, tag int) (*Request, error) {
	if c == nil {
		return nil, errNilComm
	}
	t := c.begin(opIsend)
	r, err := c.in.Isend(buf, dest, tag)
	c.endP2P(nil, t, opIsend, len(buf), dest, true, err)
	if err != nil {
		return nil, err
	}
	return &Request{r: r, c: c.in}, nil
}

// Irecv starts receiving into buf a message from src (or AnySource) with
// tag (or AnyTag); buf must not be read or changed until the request
// completes.
func (c *Comm) Irecv(buf []byte, src, tag int) (*Request, error) {
	if c == nil {
		return nil, errNilComm
	}
	t := c.begin(opIrecv)
	r, err := c.in.Irecv(buf, src, tag)
	// The receive's bytes and source are known at its Wait: counted there.
	c.endP2P(nil, t, opIrecv, -1, observe.NoRank, false, err)
	if err != nil {
		return nil, err
	}
	return &Request{r: r, c: c.in}, nil
}

// Ssend sends buf to rank dest of c with tag in synchronous mode
// (MPI_Ssend): it returns only once the receiver has posted a matching
// receive and the message has matched it, at every size — not, as Send
// may, once the data is buffered. A program that works with Ssend in
// place of every Send relies on no buffering. If ctx ends first, Ssend
// withdraws the message when it still can and returns ctx.Err().
func (c *Comm) Ssend(ctx context.Context, buf []byte, dest, tag int) error {
	if c == nil {
		return errNilComm
	}
	t := c.begin(opSsend)
	err := c.in.Ssend(ctx, buf, dest, tag)
	c.endP2P(ctx, t, opSsend, len(buf), dest, true, err)
	return err
}

// Issend starts a synchronous send (MPI_Issend): the request completes
// only once the receiver has matched the message with a receive, so its
// completion says the receive was posted. buf must not change until the
// request completes; Cancel withdraws it while no receive has matched.
func (c *Comm) Issend(buf []byte, dest, tag int) (*Request, error) {
	if c == nil {
		return nil, errNilComm
	}
	t := c.begin(opIssend)
	r, err := c.in.Issend(buf, dest, tag)
	c.endP2P(nil, t, opIssend, len(buf), dest, true, err)
	if err != nil {
		return nil, err
	}
	return &Request{r: r, c: c.in}, nil
}

// SendrecvReplace sends buf to dest with sendTag and receives into buf
// from src (or AnySource) with recvTag (or AnyTag), as MPI_Sendrecv_replace
// does: what is sent is buf as it was at the call (a copy of it travels),
// and the message received replaces it. A message longer than buf fills
// it and returns an error wrapping ErrTruncate, as Recv does.
func (c *Comm) SendrecvReplace(ctx context.Context, buf []byte, dest, sendTag, src, recvTag int) (Status, error) {
	if c == nil {
		return Status{}, errNilComm
	}
	// Sendrecv sends a copy of an overlapping send buffer: here the two
	// are one.
	t := c.begin(opSendrecvReplace)
	st, err := c.in.Sendrecv(ctx, buf, dest, sendTag, buf, src, recvTag)
	c.endP2P(ctx, t, opSendrecvReplace, len(buf), dest, true, err)
	return st, err
}

// Sendrecv sends sendBuf to dest and receives into recvBuf from src at the
// same time, so that pairs of ranks exchanging with each other cannot
// deadlock. The two buffers may overlap (in place): what is sent is
// sendBuf as it was at the call.
func (c *Comm) Sendrecv(ctx context.Context, sendBuf []byte, dest, sendTag int, recvBuf []byte, src, recvTag int) (Status, error) {
	if c == nil {
		return Status{}, errNilComm
	}
	t := c.begin(opSendrecv)
	st, err := c.in.Sendrecv(ctx, sendBuf, dest, sendTag, recvBuf, src, recvTag)
	c.endP2P(ctx, t, opSendrecv, len(sendBuf), dest, true, err)
	return st, err
}

// Probe waits until a message from src (or AnySource) with tag (or AnyTag)
// can be received and describes it without receiving it.
func (c *Comm) Probe(ctx context.Context, src, tag int) (Status, error) {
	if c == nil {
		return Status{}, errNilComm
	}
	t := c.begin(opProbe)
	st, err := c.in.Probe(ctx, src, tag)
	c.endP2P(ctx, t, opProbe, -1, observe.NoRank, false, err)
	return st, err
}

// Iprobe reports whether a message from src (or AnySource) with tag (or
// AnyTag) can be received now, and describes it.
func (c *Comm) Iprobe(src, tag int) (Status, bool, error) {
	if c == nil {
		return Status{}, false, errNilComm
	}
	return c.in.Iprobe(src, tag)
}
