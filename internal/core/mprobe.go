package core

import (
	"context"
	"errors"
)

// A matched probe (MPI-3's MPI_Mprobe) takes the message it finds out of
// matching: no receive or probe sees it again, and only a receive through
// its Message gets it. Goroutines probing one communicator at once each
// get their own message, where a Probe followed by a Recv could receive
// another goroutine's. A taken message stays findable by its sender's
// withdraw (Cancel, a context that ends): it is then marked, and its
// receive fails as a matched receive of a withdrawn message does.

// ErrMessageReceived is the error of a second receive of one Message.
var ErrMessageReceived = errors.New("commtune: the probed message was already received")

// Message is a message a matched probe took out of matching; Mrecv
// receives it, once.
type Message struct {
	c  *matchCtx
	u  *unexpected // nil once received
	st Status
}

// Status describes the message: its world-rank source, tag and size.
func (m *Message) Status() Status { return m.st }

// Improbe takes a message matching (src, tag) in context ctxID if one is
// waiting; ok is false if none is.
func (e *Engine) Improbe(ctxID uint64, src, tag int) (m *Message, ok bool, err error) {
	if err := e.checkRank(src, true); err != nil {
		return nil, false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.takeLocked(ctxID, src, tag)
}

// Mprobe waits until a message matching (src, tag) is waiting in context
// ctxID and takes it, or ctx ends. An any-source probe fails if a peer is
// lost abnormally while it waits.
func (e *Engine) Mprobe(ctx context.Context, ctxID uint64, src, tag int) (*Message, error) {
	if err := e.checkRank(src, true); err != nil {
		return nil, err
	}
	var m *Message
	err := e.probeWait(ctx, func() (ok bool, err error) {
		m, ok, err = e.takeLocked(ctxID, src, tag)
		return ok, err
	})
	return m, err
}

func (e *Engine) takeLocked(ctxID uint64, src, tag int) (*Message, bool, error) {
	c := e.ctxLocked(ctxID)
	if u := c.findUnexpected(src, tag); u != nil && !c.revoked {
		c.removeUnexpected(u)
		c.pushTaken(u)
		return &Message{c: c, u: u, st: Status{Source: u.peer, Tag: u.tag, Count: u.size}}, true, nil
	}
	_, _, err := e.probeLocked(ctxID, src, tag) // closed, or src lost
	return nil, false, err
}

// Mrecv receives the message m took into buf, as Irecv would have (a
// longer message fills buf and fails with ErrTruncate). A second Mrecv of
// m fails with ErrMessageReceived.
func (e *Engine) Mrecv(m *Message, buf []byte) *Request {
	r := e.newRequest(opRecv, m.st.Source, m.st.Tag, buf)
	var out outbox
	e.mu.Lock()
	u := m.u
	m.u = nil
	switch {
	case u == nil:
		r.step(evFinish, Status{}, ErrMessageReceived)
	case u.withdrawn:
		m.c.removeTaken(u)
		r.step(evFinish, m.st, &WithdrawnError{Rank: u.peer})
	case e.closed != nil:
		m.c.removeTaken(u)
		r.step(evClose, Status{}, e.closed)
	default:
		m.c.removeTaken(u)
		r.c = m.c
		e.consumeLocked(r, u, &out)
	}
	e.mu.Unlock()
	out.flush(e)
	return r
}
