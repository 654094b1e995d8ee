package rma

import (
	"context"
	"errors"
	"fmt"

	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/core"
)

// Pending is a one-sided operation under way: a request-based Put, Get or
// accumulate (MPI's Rput, Rget …), complete when its data may be reused
// (Put, Accumulate) or has arrived (Get, GetAccumulate).
type Pending struct {
	req    *core.Request // the send, or the reply's receive; nil: complete
	status *[1]byte      // the reply's status byte; nil for a send
	result []byte        // where the reply lands: its error text on failure
	target int
	err    error
}

// done returns a Pending complete with err.
func done(err error) *Pending { return &Pending{err: err} }

// Wait blocks until the operation completes or ctx ends.
func (p *Pending) Wait(ctx context.Context) error {
	if p.req == nil {
		return p.err
	}
	st, err := p.req.Wait(ctx)
	return p.result0(st, err)
}

// Test reports whether the operation has completed, and its error if so.
func (p *Pending) Test() (bool, error) {
	if p.req == nil {
		return true, p.err
	}
	st, ok, err := p.req.Test()
	if !ok {
		return false, nil
	}
	return true, p.result0(st, err)
}

// Done returns a channel closed when the operation completes.
func (p *Pending) Done() <-chan struct{} {
	if p.req == nil {
		return closed
	}
	return p.req.Done()
}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (p *Pending) result0(st core.Status, err error) error {
	if err != nil {
		var te *core.TruncateError
		if p.status != nil && p.status[0] == 1 && errors.As(err, &te) {
			return fmt.Errorf("rma: rank %d refused the operation (its reason was longer than the result buffer)", p.target)
		}
		return err
	}
	if p.status != nil && p.status[0] != 0 {
		n := min(max(st.Count-1, 0), len(p.result))
		return fmt.Errorf("rma: rank %d refused the operation: %s", p.target, p.result[:n])
	}
	return nil
}

// replyTo answers origin's request tag on rep: ok with data, or err.
func replyTo(ctx context.Context, rep *comm.Comm, origin, tag int, data []byte, err error) error {
	status := []byte{0}
	if err != nil {
		status[0], data = 1, []byte(err.Error())
	}
	return rep.SendSegs(ctx, [][]byte{status, data}, origin, tag)
}
