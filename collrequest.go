package commtune

import (
	"context"

	"github.com/commtune/commtune/internal/comm"
)

// CollOption adjusts one collective call.
type CollOption struct {
	// set holds what the option sets, the rest left zero: a value, not a
	// function, so that reading a call's options allocates nothing.
	set comm.Options
}

// WithAlgorithm runs the call with the named algorithm rather than the
// one the decision table picks: a name as `commtune bench coll` prints
// it ("bcast/binomial/seg=16K") or a short form without the operation
// ("binomial:seg=16K"). Every rank must pass the same one. An unknown
// name, or an algorithm that reorders a non-commutative reduction, is an
// error.
func WithAlgorithm(name string) CollOption {
	return CollOption{set: comm.Options{Algorithm: name}}
}

// CollChoice tells how a collective call chose its algorithm (see
// WithChoice).
type CollChoice struct {
	// Algorithm is the name of the algorithm that ran.
	Algorithm string
	// By says who chose it: ChosenByOption (WithAlgorithm), ChosenByEnv
	// (COMMTUNE_COLL_<OP>), ChosenByTable (the fixed decision table),
	// ChosenBySampled (the decision table `commtune sample` measured on
	// this machine) or ChosenByLottery (the lottery scheduler,
	// COMMTUNE_COLL_SELECT).
	By string
	// Leader is, under the lottery and on rank 0 (the rank that draws and
	// records), the candidate with the best average for the call's key
	// once the call has run: the one holding most tickets. Elsewhere it is
	// empty.
	Leader string
}

// Who chose a call's algorithm (CollChoice.By).
const (
	ChosenByOption  = comm.ChosenByOption
	ChosenByEnv     = comm.ChosenByEnv
	ChosenByTable   = comm.ChosenByTable
	ChosenBySampled = comm.ChosenBySampled
	ChosenByLottery = comm.ChosenByLottery
)

// WithChoice makes the call fill *dst, when it succeeds, with the
// algorithm it ran and who chose it: for logs, benchmarks and tests that
// follow a selector's decisions.
func WithChoice(dst *CollChoice) CollOption {
	return CollOption{set: comm.Options{Choice: func(ch comm.Choice) { *dst = CollChoice(ch) }}}
}

// readOptions merges opts, the later winning.
func readOptions(opts []CollOption) comm.Options {
	var o comm.Options
	for _, f := range opts {
		if f.set.Algorithm != "" {
			o.Algorithm = f.set.Algorithm
		}
		if f.set.Choice != nil {
			o.Choice = f.set.Choice
		}
	}
	return o
}

// runNow runs a prepared call (blocking forms).
func runNow(ctx context.Context) func(*comm.Call, error) error {
	return func(k *comm.Call, err error) error {
		if err != nil || k == nil { // k == nil: prepare ran it (now)
			return err
		}
		return k.Run(ctx, true)
	}
}

// start runs a prepared call in its own goroutine (nonblocking forms).
func start(ctx context.Context) func(*comm.Call, error) (*CollRequest, error) {
	return func(k *comm.Call, err error) (*CollRequest, error) {
		if err != nil {
			return nil, err
		}
		q := &CollRequest{done: make(chan struct{}), c: k.Comm()}
		go func() {
			q.c.Recorder().LabelGoroutine(k.Op())
			q.err = k.Run(ctx, false)
			close(q.done)
		}()
		return q, nil
	}
}

// CollRequest is a nonblocking collective call in progress.
type CollRequest struct {
	done chan struct{}
	err  error
	c    *comm.Comm
}

// Wait blocks until the call completes and returns its error, or until
// ctx ends (the call goes on; it ends only with the context it was started
// with).
func (q *CollRequest) Wait(ctx context.Context) error {
	if q == nil {
		return errNilRequest
	}
	t := q.c.Recorder().Begin(opCollWait, q.c)
	var err error
	select {
	case <-q.done:
		err = q.err
	case <-ctx.Done():
		err = ctx.Err()
	}
	endCall(ctx, q.c, t, opCollWait, "", "", err)
	return err
}

// Test reports whether the call has completed and, if so, its error.
func (q *CollRequest) Test() (bool, error) {
	if q == nil {
		return true, errNilRequest
	}
	select {
	case <-q.done:
		return true, q.err
	default:
		return false, nil
	}
}

// Done returns a channel closed when the call completes (already closed
// for a nil request).
func (q *CollRequest) Done() <-chan struct{} {
	if q == nil {
		return closedChan
	}
	return q.done
}

// outcome is Test, for Pending: a collective has no status.
func (q *CollRequest) outcome() (Status, bool, error) {
	done, err := q.Test()
	return Status{}, done, err
}

// wait is Wait, for the calls over sets of requests (waiter).
func (q *CollRequest) wait(ctx context.Context) error { return q.Wait(ctx) }
