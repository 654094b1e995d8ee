package commtune

import (
	"context"
	"errors"
	"fmt"

	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/observe"
)

// Prequest is a persistent request (MPI's persistent requests): a send, a
// receive or a collective call whose arguments are checked once — by
// SendInit, RecvInit or a collective's …Init, which for a collective also
// fixes its algorithm — and which Start then runs again and again on the
// same buffers, whose contents the caller changes between starts. A
// started request is active until Wait or Test (or a completion call
// over Pending requests) reports it complete; it may then be started
// again, or freed. Its buffers belong to it while it is active. Wait and
// Test on a request that is not active return at once, with an empty
// status, as MPI's do. A Prequest is used by one goroutine at a time.
type Prequest struct {
	p2p    *comm.P2P
	coll   *comm.Persistent
	r      *core.Request // a started send's or receive's, until its completion is reported
	elem   int           // a typed receive's element size, which the count must divide
	what   string        // "send", "receive" or the collective operation, for errors
	active bool
	freed  bool
}

// errFreed is the error of a freed request's Start.
var errFreed = errors.New("commtune: persistent request used after Free")

// SendInit makes a persistent send of buf to rank dest of c with tag (≥ 0;
// MPI_Send_init): dest and tag are checked here, once. Each Start sends
// what buf holds then, as Isend would.
func (c *Comm) SendInit(buf []byte, dest, tag int) (*Prequest, error) {
	if c == nil {
		return nil, errNilComm
	}
	q, err := c.in.SendInit(buf, dest, tag)
	if err != nil {
		return nil, err
	}
	return &Prequest{p2p: q, what: "send"}, nil
}

// RecvInit makes a persistent receive into buf from rank src of c (or
// AnySource) with tag (or AnyTag; MPI_Recv_init): src and tag are checked
// here, once. Each Start receives one message, as Irecv would.
func (c *Comm) RecvInit(buf []byte, src, tag int) (*Prequest, error) {
	if c == nil {
		return nil, errNilComm
	}
	q, err := c.in.RecvInit(buf, src, tag)
	if err != nil {
		return nil, err
	}
	return &Prequest{p2p: q, what: "receive"}, nil
}

// SendInitSlice makes a persistent send of s to dest with tag, like
// SendInit on its bytes.
func SendInitSlice[T any](c *Comm, s []T, dest, tag int) (*Prequest, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	return c.SendInit(bytesOf(s), dest, tag)
}

// RecvInitSlice makes a persistent receive into s from src with tag, like
// RecvInit on its bytes; a start whose message is not a whole number of
// elements completes with an error.
func RecvInitSlice[T any](c *Comm, s []T, src, tag int) (*Prequest, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	p, err := c.RecvInit(bytesOf(s), src, tag)
	if err != nil {
		return nil, err
	}
	p.elem = elemSize[T]()
	return p, nil
}

// Start starts the request: a send sends its buffer's contents, a receive
// posts its buffer, a collective takes its place in the order of its
// communicator's collective calls, all as their nonblocking forms do; it
// returns without waiting for any rank. Starting a request that is active
// (started, and its completion not yet reported), freed or nil is an
// error. A collective call's own failure (a lost peer, ranks that
// disagree) is reported by Wait or Test, not here.
func (p *Prequest) Start() error {
	if err := p.startable(); err != nil {
		return err
	}
	return p.start()
}

// startable returns why p cannot be started, if it cannot.
func (p *Prequest) startable() error {
	switch {
	case p == nil:
		return errNilRequest
	case p.freed:
		return errFreed
	case p.active:
		return fmt.Errorf("commtune: persistent %s started while active: Wait for it or Test it first", p.what)
	}
	return nil
}

func (p *Prequest) start() error {
	if p.coll != nil {
		c := p.coll.Comm()
		t := c.Recorder().Begin(opCollStart, c)
		err := p.coll.Start()
		if t.On() {
			alg, by := p.coll.Path()
			endOp(nil, c, t, opCollStart, p.coll.Bytes(), alg, by, err)
		}
		if err != nil {
			return err
		}
	} else {
		c := p.p2p.Comm()
		t := c.Recorder().Begin(opStart, c)
		r, err := p.p2p.Start()
		if t.On() {
			send, n, peer := p.p2p.Describe()
			if !send {
				n, peer = -1, observe.NoRank // counted at its Wait, as Irecv's are
			}
			(&Comm{in: c}).endP2P(nil, t, opStart, n, peer, send, err)
		}
		if err != nil {
			return err
		}
		p.r = r
	}
	p.active = true
	return nil
}

// StartAll starts every request of ps, in order (MPI_Startall): the
// collective ones take their places in their communicators' orders so.
// It starts none if one of them cannot be started (nil, freed, active, or
// given twice); if a start fails, the requests before it stay started.
func StartAll(ps ...*Prequest) error {
	for i, p := range ps {
		if err := p.startable(); err != nil {
			return fmt.Errorf("commtune: StartAll: request %d: %w", i, err)
		}
		for j := range i {
			if ps[j] == p {
				return fmt.Errorf("commtune: StartAll: requests %d and %d are the same", j, i)
			}
		}
	}
	for i, p := range ps {
		if err := p.start(); err != nil {
			return fmt.Errorf("commtune: StartAll: request %d: %w", i, err)
		}
	}
	return nil
}

// Wait blocks until the started request completes, or ctx ends, and
// returns its status (a receive's; empty for a collective) and error; the
// request is then inactive. If ctx ends first, Wait returns ctx.Err() and
// the request stays active: Wait again (a collective started goes on
// until its peers end it, as a nonblocking one started with a context
// that never ends).
func (p *Prequest) Wait(ctx context.Context) (Status, error) {
	if p == nil {
		return Status{}, errNilRequest
	}
	if !p.active {
		return Status{}, nil
	}
	if p.coll != nil {
		c := p.coll.Comm()
		t := c.Recorder().Begin(opCollWait, c)
		done, err := p.coll.Wait(ctx)
		if done {
			p.active = false
		}
		endCall(ctx, c, t, opCollWait, "", "", err)
		return Status{}, err
	}
	c := p.p2p.Comm()
	t := c.Recorder().Begin(opWait, c)
	st, done, err := p.p2p.Wait(ctx, p.r)
	if done {
		st, err = p.ended(st, err)
	}
	if t.On() {
		send, _, _ := p.p2p.Describe()
		n, peer := -1, observe.NoRank // a send counted its bytes at Start
		if !send && done && err == nil {
			n, peer = st.Count, st.Source
		}
		(&Comm{in: c}).endP2P(ctx, t, opWait, n, peer, false, err)
	}
	return st, err
}

// Test reports whether the started request has completed and, if so,
// its status and error; the request is then inactive.
func (p *Prequest) Test() (Status, bool, error) {
	if p == nil {
		return Status{}, true, errNilRequest
	}
	if !p.active {
		return Status{}, true, nil
	}
	if p.coll != nil {
		done, err := p.coll.Test()
		if done {
			p.active = false
		}
		return Status{}, done, err
	}
	st, done, err := p.p2p.Test(p.r)
	if done {
		st, err = p.ended(st, err)
	}
	return st, done, err
}

// ended makes a send or receive whose request completed (and was handed
// back) inactive, and checks a typed receive's count.
func (p *Prequest) ended(st Status, err error) (Status, error) {
	p.r, p.active = nil, false
	if err == nil && p.elem > 1 && st.Count%p.elem != 0 {
		err = countError(st, p.elem)
	}
	return st, err
}

// outcome is Test, for completion calls over Pending requests.
func (p *Prequest) outcome() (Status, bool, error) { return p.Test() }

// Done returns a channel closed when the started request completes, for
// use in select (closed already for a request that is not active, or
// nil). Its completion is still to be reported by Wait or Test, which then
// return at once. A collective start that Done's caller would otherwise
// end itself, in Wait, is ended in a goroutine of its own.
func (p *Prequest) Done() <-chan struct{} {
	switch {
	case p == nil || !p.active:
		return closedChan
	case p.coll != nil:
		return p.coll.Done()
	}
	return p.r.Done()
}

// Cancel withdraws a started send or receive that can still be withdrawn,
// as Request.Cancel does; it then completes with ErrCanceled, which Wait
// or Test reports. It returns false for a collective, which cannot be
// withdrawn, and for a request not active.
func (p *Prequest) Cancel() bool {
	return p != nil && p.active && p.r != nil && p.r.Cancel()
}

// Free releases the request (MPI_Request_free): it may not be started
// again. Freeing an active request is an error: Wait for it (or Test it)
// first; so is freeing one twice.
func (p *Prequest) Free() error {
	switch {
	case p == nil:
		return errNilRequest
	case p.freed:
		return fmt.Errorf("commtune: persistent %s freed twice", p.what)
	case p.active:
		return fmt.Errorf("commtune: persistent %s freed while active: Wait for it or Test it first", p.what)
	}
	p.freed, p.p2p, p.coll = true, nil, nil
	return nil
}
