package commtune

import (
	"context"
	"errors"
	"reflect"
)

// Completion over sets of requests, as MPI's MPI_Testall … MPI_Waitsome:
// each call takes requests of one kind (reqs... of *Request, say) or of
// several (a []Pending holding *Request, *CollRequest, *NeighborRequest
// values). A nil entry — a nil interface, or a nil request inside one —
// is a null request (MPI_REQUEST_NULL): skipped, never reported. A
// request stays complete once it has completed, and every call reports it
// again, so a caller that goes on with the rest sets the entries it has
// handled to nil. Statuses are zero for collective requests, which have
// none. An error joins the errors of the requests reported complete;
// Test or Wait on one of them tells which failed.

// waiter is implemented by request kinds whose own Wait does more than
// watch Done: a point-to-point request's wait polls the rails, which on
// shared memory receives the message in the waiting goroutine rather than
// leaving it for the transport's own goroutine to deliver later. WaitAll,
// and WaitAny and WaitSome with one request left, wait through it; kinds
// without it are waited for on Done.
type waiter interface {
	// wait blocks until the request completes or ctx ends; outcome then
	// tells which.
	wait(ctx context.Context) error
}

// isNull reports whether q is a null request: a nil interface or a nil
// pointer inside one.
func isNull[R Pending](q R) bool {
	switch v := any(q).(type) {
	case nil:
		return true
	case *Request:
		return v == nil
	case *CollRequest:
		return v == nil
	case *NeighborRequest:
		return v == nil
	}
	// A request kind the switch does not know (this package's own): a nil
	// pointer, map, slice, … inside the interface.
	switch v := reflect.ValueOf(q); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// waitOne blocks until q (not null) completes or ctx ends; q's outcome
// then tells which.
func waitOne(ctx context.Context, q Pending) {
	switch v := q.(type) {
	case *Request: // the common case, without an interface lookup
		_ = v.wait(ctx)
	case waiter:
		_ = v.wait(ctx)
	default:
		select {
		case <-q.Done():
		case <-ctx.Done():
		}
	}
}

// TestAll reports whether every request has completed and, if so, the
// statuses (by position; zero for null entries) and the requests' errors
// joined. If one is still pending it reports false with no statuses and
// no error: as MPI_Testall, nothing is reported until all are.
func TestAll[R Pending](reqs ...R) (bool, []Status, error) {
	for _, q := range reqs {
		if isNull(q) {
			continue
		}
		if _, done, _ := q.outcome(); !done {
			return false, nil, nil
		}
	}
	sts := make([]Status, len(reqs))
	var errs []error
	for i, q := range reqs {
		if isNull(q) {
			continue
		}
		st, _, err := q.outcome() // complete: it stays so
		sts[i] = st
		if err != nil {
			errs = append(errs, err)
		}
	}
	return true, sts, errors.Join(errs...)
}

// TestAny reports one completed request: its index (the lowest among
// those complete), status and error, with ok true. With requests pending
// and none complete, ok is false and index -1. With no non-nil request
// it returns index -1 and ok true, as MPI_Testany returns MPI_UNDEFINED
// with its flag set.
func TestAny[R Pending](reqs ...R) (index int, st Status, ok bool, err error) {
	live := false
	for i, q := range reqs {
		if isNull(q) {
			continue
		}
		live = true
		if st, done, err := q.outcome(); done {
			return i, st, true, err
		}
	}
	return -1, Status{}, !live, nil
}

// TestSome returns the indices of every completed request, in order,
// their statuses (one per index) and their errors joined. With requests
// pending and none complete the indices are empty, not nil; with no
// non-nil request they are nil (MPI_Testsome's MPI_UNDEFINED).
func TestSome[R Pending](reqs ...R) ([]int, []Status, error) {
	idx, sts := []int(nil), []Status(nil)
	var errs []error
	live := false
	for i, q := range reqs {
		if isNull(q) {
			continue
		}
		live = true
		if st, done, err := q.outcome(); done {
			idx, sts = append(idx, i), append(sts, st)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	if live && idx == nil {
		return []int{}, []Status{}, nil
	}
	return idx, sts, errors.Join(errs...)
}

// WaitAll waits for every request and returns their statuses (by
// position; zero for null entries); the error joins every request's
// error. If ctx ends first it returns ctx.Err() and the unfinished
// requests stay pending. Each request is waited for by its own Wait, so a
// point-to-point request polls the rails as Request.Wait does.
func WaitAll[R Pending](ctx context.Context, reqs ...R) ([]Status, error) {
	sts := make([]Status, len(reqs))
	var errs []error
	for i, q := range reqs {
		if isNull(q) {
			continue
		}
		waitOne(ctx, q)
		st, done, err := q.outcome()
		if !done {
			return sts, ctx.Err()
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
// request stays complete, so callers set it to nil (skipped) before
// waiting again. With no non-nil request it returns -1 at once. If ctx
// ends first it returns -1 and ctx.Err().
func WaitAny[R Pending](ctx context.Context, reqs ...R) (int, Status, error) {
	for {
		if i, st, ok, err := TestAny(reqs...); ok {
			return i, st, err
		}
		if err := ctx.Err(); err != nil {
			return -1, Status{}, err
		}
		awaitAny(ctx, reqs)
	}
}

// WaitSome waits until at least one of reqs completes and returns the
// indices of all those complete then, in order, their statuses and their
// errors joined (see TestSome). With no non-nil request it returns nil
// indices at once. If ctx ends first it returns ctx.Err() and no index.
func WaitSome[R Pending](ctx context.Context, reqs ...R) ([]int, []Status, error) {
	for {
		idx, sts, err := TestSome(reqs...)
		if len(idx) > 0 || idx == nil {
			return idx, sts, err
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		awaitAny(ctx, reqs)
	}
}

// awaitAny blocks until one of reqs' non-null requests completes or ctx
// ends. The last one left is waited for by its own wait (waiter), which
// polls the rails where a Done channel would not; two are a plain select;
// more, one select over all their Done channels.
func awaitAny[R Pending](ctx context.Context, reqs []R) {
	var a, b Pending
	live := 0
	for _, q := range reqs {
		if isNull(q) {
			continue
		}
		if live == 0 {
			a = q
		} else if live == 1 {
			b = q
		}
		live++
	}
	switch live {
	case 0:
		return
	case 1:
		waitOne(ctx, a)
		return
	case 2:
		select {
		case <-a.Done():
		case <-b.Done():
		case <-ctx.Done():
		}
		return
	}
	cases := make([]reflect.SelectCase, 0, live+1)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for _, q := range reqs {
		if !isNull(q) {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(q.Done())})
		}
	}
	reflect.Select(cases)
}
