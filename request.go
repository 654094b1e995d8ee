package commtune

import (
	"context"
	"errors"
	"reflect"

	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/core"
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
	st, err := q.r.Wait(ctx)
	return q.c.Status(st), err
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

// WaitAll waits for every request and returns their statuses; the error
// joins every request's error. If ctx ends first it returns ctx.Err() and
// the unfinished requests stay pending. Nil requests are skipped.
func WaitAll(ctx context.Context, reqs ...*Request) ([]Status, error) {
	sts := make([]Status, len(reqs))
	var errs []error
	for i, q := range reqs {
		if q == nil {
			continue
		}
		st, err := q.Wait(ctx)
		if _, done, _ := q.r.Test(); !done {
			return sts, err // ctx ended
		}
		sts[i] = st
		if err != nil {
			errs = append(errs, err)
		}
	}
	return sts, errors.Join(errs...)
}

// WaitAny waits until one of reqs completes and returns its index and
// result; the lowest index wins among those already complete. A completed
// request stays complete, so callers set it to nil (skipped) before waiting
// again. With no non-nil request it returns -1.
func WaitAny(ctx context.Context, reqs ...*Request) (int, Status, error) {
	live := 0
	for i, q := range reqs {
		if q == nil {
			continue
		}
		live++
		if st, done, err := q.Test(); done {
			return i, st, err
		}
	}
	if live == 0 {
		return -1, Status{}, nil
	}
	cases := make([]reflect.SelectCase, 0, live+1)
	index := make([]int, 0, live)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for i, q := range reqs {
		if q != nil {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(q.Done())})
			index = append(index, i)
		}
	}
	chosen, _, _ := reflect.Select(cases)
	if chosen == 0 {
		return -1, Status{}, ctx.Err()
	}
	i := index[chosen-1]
	st, _, err := reqs[i].Test()
	return i, st, err
}
