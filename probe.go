package commtune

import (
	"context"
	"errors"

	"github.com/commtune/commtune/internal/core"
)

// ErrMessageReceived is returned by a second receive of one Message.
var ErrMessageReceived = core.ErrMessageReceived

// Message is a message a matched probe (Mprobe, Improbe) took out of
// matching: no other receive or probe sees it, and only Mrecv or Imrecv
// with this Message receives it, once. Where several goroutines receive on
// one communicator, Probe followed by Recv may receive another goroutine's
// message; Mprobe followed by Mrecv cannot.
type Message struct {
	m  *core.Message
	c  *Comm
	st Status
}

// Status describes the message: source, tag and size in bytes.
func (m *Message) Status() Status { return m.st }

// Mprobe waits until a message from src (or AnySource) with tag (or
// AnyTag) can be received and takes it out of matching. If ctx ends first
// it returns ctx.Err() and takes nothing.
func (c *Comm) Mprobe(ctx context.Context, src, tag int) (*Message, error) {
	if c == nil {
		return nil, errNilComm
	}
	m, st, err := c.in.Mprobe(ctx, src, tag)
	if err != nil {
		return nil, err
	}
	return &Message{m: m, c: c, st: st}, nil
}

// Improbe takes a message from src (or AnySource) with tag (or AnyTag) out
// of matching if one can be received now; ok is false if none can.
func (c *Comm) Improbe(src, tag int) (m *Message, ok bool, err error) {
	if c == nil {
		return nil, false, errNilComm
	}
	cm, st, ok, err := c.in.Improbe(src, tag)
	if !ok || err != nil {
		return nil, false, err
	}
	return &Message{m: cm, c: c, st: st}, true, nil
}

// Mrecv receives the message m took into buf (a longer message fills buf
// and returns an error wrapping ErrTruncate). m must come from a probe on
// c. Once matched the message is not withdrawn: if ctx ends while its data
// moves, Mrecv finishes first.
func (c *Comm) Mrecv(ctx context.Context, m *Message, buf []byte) (Status, error) {
	if err := c.checkMessage(m); err != nil {
		return Status{}, err
	}
	return c.in.Mrecv(ctx, m.m, buf)
}

// Imrecv starts receiving the message m took into buf; buf must not be
// read or changed until the request completes.
func (c *Comm) Imrecv(m *Message, buf []byte) (*Request, error) {
	if err := c.checkMessage(m); err != nil {
		return nil, err
	}
	r, err := c.in.Imrecv(m.m, buf)
	if err != nil {
		return nil, err
	}
	return &Request{r: r, c: c.in}, nil
}

// RecvBytes receives a message of any size from src (or AnySource) with
// tag (or AnyTag) into a new buffer of exactly its size, made when the
// message matches (nil for an empty message). If ctx ends before a
// message matches, the receive is withdrawn and ctx.Err() returned.
func (c *Comm) RecvBytes(ctx context.Context, src, tag int) ([]byte, Status, error) {
	if c == nil {
		return nil, Status{}, errNilComm
	}
	return c.in.RecvAlloc(ctx, src, tag)
}

var errForeignMessage = errors.New("commtune: the message was probed on another communicator")

func (c *Comm) checkMessage(m *Message) error {
	if err := c.check(); err != nil {
		return err
	}
	switch {
	case m == nil:
		return errors.New("commtune: nil message")
	case m.c != c:
		return errForeignMessage
	}
	return nil
}
