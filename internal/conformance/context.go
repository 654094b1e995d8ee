package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/commtune/commtune"
)

// Deadlines of the context checks, and how late past its deadline a call
// may return (the transport must withdraw a message, a round trip, on a
// loaded machine).
const (
	ctxSendDeadline = 100 * time.Millisecond
	ctxCollDeadline = 200 * time.Millisecond
	ctxSlack        = 1500 * time.Millisecond
)

// ContextChecks holds every transport and method to the same promises
// about contexts and Cancel, with rank 1 alive but not receiving:
//
//   - send-deadline: a 2 MiB Send whose context ends returns ctx.Err()
//     soon after, and the message is withdrawn;
//   - cancel-unmatched: Cancel on a 2 MiB Isend nobody receives returns
//     true, and the request ends with ErrCanceled;
//   - bcast-missing and barrier-missing: a 1 MiB Bcast, and a Barrier,
//     that the last rank does not join return soon after their context
//     ends on every rank that joined — with an error wherever the call
//     needs the missing rank (every rank of a barrier; a broadcast's
//     ranks that send to it or receive through it).
//
// It returns one line per check and rank 0's observation, for the table
// the process test prints.
func ContextChecks(ctx context.Context, c *commtune.Comm) ([]string, error) {
	var report []string
	say := func(format string, args ...any) { report = append(report, fmt.Sprintf(format, args...)) }
	if c.Rank() <= 1 && c.Size() > 1 {
		if err := withdrawals(ctx, c, say); err != nil {
			return report, err
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return report, err
	}
	for _, check := range []struct {
		name     string
		call     func(context.Context, *commtune.Comm) error
		mustFail bool
	}{
		{"bcast-missing", func(ctx context.Context, d *commtune.Comm) error {
			return commtune.Bcast(ctx, d, make([]byte, 1<<20), 0)
		}, c.Size() == 2},
		{"barrier-missing", func(ctx context.Context, d *commtune.Comm) error { return d.Barrier(ctx) }, true},
	} {
		// On a communicator of its own: the missing rank leaves it out of
		// step, as MPI says a context ending mid-call does.
		d, err := c.Dup()
		if err != nil {
			return report, err
		}
		if c.Rank() != c.Size()-1 {
			short, cancel := context.WithTimeout(ctx, ctxCollDeadline)
			start := time.Now()
			err := check.call(short, d)
			took := time.Since(start)
			cancel()
			if err == nil && check.mustFail || took > ctxCollDeadline+ctxSlack {
				return report, fmt.Errorf("%s on %d ranks, the last missing: %v after %v; want an error within %v", check.name, c.Size(), err, took, ctxCollDeadline+ctxSlack)
			}
			if c.Rank() == 0 {
				say("%s: %s after %v", check.name, short1(err), took.Round(time.Millisecond))
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return report, err
		}
	}
	return report, nil
}

// withdrawals runs send-deadline and cancel-unmatched between ranks 0
// and 1; rank 1 waits meanwhile for a go-ahead on another tag.
func withdrawals(ctx context.Context, c *commtune.Comm, say func(string, ...any)) error {
	const tagSend, tagCancel, tagGo = 101, 102, 103
	big := make([]byte, 2<<20)
	if c.Rank() == 1 {
		if _, err := c.Recv(ctx, nil, 0, tagGo); err != nil {
			return err
		}
		for _, tag := range []int{tagSend, tagCancel} {
			if _, ok, err := c.Iprobe(0, tag); err != nil || ok {
				return fmt.Errorf("a withdrawn message with tag %d is still receivable (%v)", tag, err)
			}
		}
		return nil
	}
	short, cancel := context.WithTimeout(ctx, ctxSendDeadline)
	start := time.Now()
	err := c.Send(short, big, 1, tagSend)
	took := time.Since(start)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || took > ctxSendDeadline+ctxSlack {
		return fmt.Errorf("send-deadline: a 2 MiB Send nobody receives returned %v after %v; want %v within %v",
			err, took, context.DeadlineExceeded, ctxSendDeadline+ctxSlack)
	}
	say("send-deadline: %s after %v", short1(err), took.Round(time.Millisecond))

	q, err := c.Isend(big, 1, tagCancel)
	if err != nil {
		return err
	}
	start = time.Now()
	ok := q.Cancel()
	took = time.Since(start)
	if _, werr := q.Wait(ctx); !ok || !errors.Is(werr, commtune.ErrCanceled) {
		return fmt.Errorf("cancel-unmatched: Cancel on a 2 MiB Isend nobody receives returned %v, then %v", ok, werr)
	}
	say("cancel-unmatched: Cancel true in %v, then %s", took.Round(time.Microsecond), short1(commtune.ErrCanceled))
	return c.Send(ctx, nil, 1, tagGo)
}

// short1 names an error by its sentinel.
func short1(err error) string {
	switch {
	case err == nil:
		return "nil (done)"
	case errors.Is(err, context.DeadlineExceeded):
		return "ctx.Err()"
	case errors.Is(err, commtune.ErrCanceled):
		return "ErrCanceled"
	case errors.Is(err, commtune.ErrPeerLost):
		return "ErrPeerLost"
	case errors.Is(err, commtune.ErrSizeMismatch):
		return "ErrSizeMismatch"
	case errors.Is(err, commtune.ErrTruncate):
		return "ErrTruncate"
	}
	return err.Error()
}

func contextCase(ctx context.Context, c *commtune.Comm) error {
	_, err := ContextChecks(ctx, c)
	return err
}
