package commtune

import (
	"context"
	"errors"

	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/observe"
)

// Request is a nonblocking send or receive in progress.
type Request struct {
	r *core.Request
	c *comm.Comm // whose ranks its status names
}

// errNilRequest is what a nil *Request's methods report: complete, with
// this error.
var errNilRequest = errors.New("commtune: nil request")

// Wait blocks until the request completes or ctx ends. On ctx's end it
// returns ctx.Err() and the request stays pending: Wait again, or Cancel.
func (q *Request) Wait(ctx context.Context) (Status, error) {
	if q == nil {
		return Status{}, errNilRequest
	}
	t := q.c.Recorder().Begin(opWait, q.c)
	raw, err := q.r.Wait(ctx)
	st := q.c.Status(raw)
	if t.On() {
		(&Comm{in: q.c}).endP2P(ctx, t, opWait, q.received(st, err), q.source(st, err), false, err)
	}
	return st, err
}

// received is what a completed receive counts at its Wait: its bytes; a
// send counted its own at Isend (-1).
func (q *Request) received(st Status, err error) int {
	if err != nil || !q.r.IsRecv() {
		return -1
	}
	return st.Count
}

// source is the peer a receive's Wait counts it against.
func (q *Request) source(st Status, err error) int {
	if err != nil || !q.r.IsRecv() {
		return observe.NoRank
	}
	return st.Source
}

// Test reports whether the request has completed and, if so, its result.
func (q *Request) Test() (Status, bool, error) {
	if q == nil {
		return Status{}, true, errNilRequest
	}
	st, done, err := q.r.Test()
	return q.c.Status(st), done, err
}

// Cancel withdraws the request if it has not started: a receive that has
// not matched, or a large send whose receiver has not yet accepted it (a
// send its receiver reads in place, over shared memory with CMA, is taken
// back unless the read has begun: Cancel then waits for the receiver's
// answer, one round trip). It returns true if the request was withdrawn
// (it then completes with ErrCanceled).
func (q *Request) Cancel() bool { return q != nil && q.r.Cancel() }

// Done returns a channel closed when the request completes, for use in
// select (already closed for a nil request).
func (q *Request) Done() <-chan struct{} {
	if q == nil {
		return closedChan
	}
	return q.r.Done()
}

// closedChan is a channel that is always closed.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// outcome is Test, for Pending.
func (q *Request) outcome() (Status, bool, error) { return q.Test() }

// wait blocks as Wait does, polling the rails while it may: for the calls
// over sets of requests (waiter).
func (q *Request) wait(ctx context.Context) error {
	if q == nil {
		return errNilRequest
	}
	_, err := q.r.Wait(ctx)
	return err
}
