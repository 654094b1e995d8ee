package conformance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/commtune/commtune"
)

// tags: the tag range is [0, TagUB]; a tag beyond it is refused by sends,
// receives and probes alike (it would not survive the wire's 32 bits and
// could match another tag, or AnyTag), and TagUB itself travels intact.
func tags(ctx context.Context, c *commtune.Comm) error {
	for _, bad := range []int{commtune.TagUB + 1, 1<<32 + 5, math.MaxInt64, -2, math.MinInt64} {
		calls := map[string]error{
			"Send":          c.Send(ctx, []byte{1}, 0, bad),
			"SendSlice":     commtune.SendSlice(ctx, c, []int32{1}, 0, bad),
			"Recv":          second(c.Recv(ctx, make([]byte, 1), 0, bad)),
			"RecvSlice":     second(commtune.RecvSlice(ctx, c, make([]int32, 1), 0, bad)),
			"Isend":         second(c.Isend([]byte{1}, 0, bad)),
			"Irecv":         second(c.Irecv(make([]byte, 1), 0, bad)),
			"Probe":         second(c.Probe(ctx, 0, bad)),
			"Iprobe":        third(c.Iprobe(0, bad)),
			"Sendrecv send": second(c.Sendrecv(ctx, []byte{1}, 0, bad, make([]byte, 1), 0, 0)),
			"Sendrecv recv": second(c.Sendrecv(ctx, []byte{1}, 0, 0, make([]byte, 1), 0, bad)),
		}
		for name, err := range calls {
			if err == nil {
				return fmt.Errorf("%s with tag %d: no error", name, bad)
			}
		}
	}
	// Sendrecv's refused send must not leave its receive posted: nothing
	// is waiting on rank 0 for tag 0 now, so this self-message is ours.
	if err := c.Send(ctx, []byte{7}, c.Rank(), 0); err != nil {
		return err
	}
	b := make([]byte, 1)
	if _, err := c.Recv(ctx, b, c.Rank(), 0); err != nil || b[0] != 7 {
		return fmt.Errorf("self-message after refused calls: %v %v", b, err)
	}
	// TagUB travels intact, eager and by rendezvous, and only a receive
	// for it (or AnyTag) takes it.
	peer := (c.Rank() + 1) % c.Size()
	from := (c.Rank() - 1 + c.Size()) % c.Size()
	for _, n := range []int{8, 1 << 20} {
		out := pattern(make([]byte, n), uint32(n))
		in := make([]byte, n)
		st, err := c.Sendrecv(ctx, out, peer, commtune.TagUB, in, from, commtune.TagUB)
		if err != nil {
			return fmt.Errorf("%d bytes with tag TagUB: %w", n, err)
		}
		if st.Tag != commtune.TagUB || st.Count != n {
			return fmt.Errorf("%d bytes with tag TagUB arrived as tag %d, %d bytes", n, st.Tag, st.Count)
		}
		if err := checkPattern(in, uint32(n)); err != nil {
			return err
		}
	}
	return c.Barrier(ctx)
}

func second[T any](_ T, err error) error        { return err }
func third[T, U any](_ T, _ U, err error) error { return err }

// ranksOutOfRange: Transport and WorldRank answer "" and -1 for ranks
// outside the communicator — AnySource among them — and probes refuse a
// negative tag other than AnyTag instead of waiting for it.
func ranksOutOfRange(ctx context.Context, c *commtune.Comm) error {
	for _, r := range []int{commtune.AnySource, -2, c.Size(), math.MaxInt} {
		if tr := c.Transport(r); tr != "" {
			return fmt.Errorf("Transport(%d) = %q, want \"\"", r, tr)
		}
		if w := c.WorldRank(r); w != -1 {
			return fmt.Errorf("WorldRank(%d) = %d, want -1", r, w)
		}
	}
	if c.Transport(c.Rank()) != "self" {
		return fmt.Errorf("Transport(self) = %q", c.Transport(c.Rank()))
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, _, err := c.Iprobe(0, -9); err == nil {
		return errors.New("Iprobe with tag -9: no error")
	}
	if _, err := c.Probe(short, 0, -5); err == nil || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("Probe with tag -5: %v, want an argument error at once", err)
	}
	return c.Barrier(ctx)
}

// nilComm: every call on a nil communicator returns an error (or, for
// those without one, a neutral value); none panics.
func nilComm(ctx context.Context, c *commtune.Comm) error {
	var none *commtune.Comm
	calls := map[string]error{
		"Send":      none.Send(ctx, nil, 0, 0),
		"Recv":      second(none.Recv(ctx, nil, 0, 0)),
		"Isend":     second(none.Isend(nil, 0, 0)),
		"Irecv":     second(none.Irecv(nil, 0, 0)),
		"Sendrecv":  second(none.Sendrecv(ctx, nil, 0, 0, nil, 0, 0)),
		"Probe":     second(none.Probe(ctx, 0, 0)),
		"Iprobe":    third(none.Iprobe(0, 0)),
		"Barrier":   none.Barrier(ctx),
		"Dup":       second(none.Dup()),
		"Split":     second(none.Split(ctx, 0, 0)),
		"Allgather": commtune.Allgather(ctx, none, []int32{1}, []int32{1}),
		"Alltoall":  commtune.Alltoall(ctx, none, []int32{1}, []int32{1}),
		"Bcast":     commtune.Bcast(ctx, none, []int32{1}, 0),
		"SendSlice": commtune.SendSlice(ctx, none, []int32{1}, 0, 0),
	}
	for name, err := range calls {
		if err == nil {
			return fmt.Errorf("%s on a nil communicator: no error", name)
		}
	}
	if none.Rank() != -1 || none.Size() != 0 || none.WorldRank(0) != -1 || none.Transport(0) != "" || none.Close() != nil {
		return errors.New("a nil communicator's Rank, Size, WorldRank, Transport or Close is not neutral")
	}
	return c.Barrier(ctx)
}

// logicalDomain: the logical reductions take integers and floats, not
// complex numbers; the call fails on every rank before any message.
func logicalDomain(ctx context.Context, c *commtune.Comm) error {
	for _, op := range []commtune.Op{commtune.LAnd, commtune.LOr, commtune.LXor, commtune.Min, commtune.BAnd} {
		if err := commtune.Allreduce(ctx, c, []complex64{1}, make([]complex64, 1), op); err == nil {
			return fmt.Errorf("Allreduce of complex64 with %s: no error", op.Name())
		}
	}
	for _, op := range []commtune.Op{commtune.LAnd, commtune.LOr, commtune.LXor} {
		got := make([]float64, 1)
		if err := commtune.Allreduce(ctx, c, []float64{2.5}, got, op); err != nil {
			return fmt.Errorf("Allreduce of float64 with %s: %w", op.Name(), err)
		}
		want := map[string]float64{"land": 1, "lor": 1, "lxor": float64(c.Size() % 2)}[op.Name()]
		if got[0] != want {
			return fmt.Errorf("Allreduce of float64 2.5 with %s on %d ranks = %v, want %v", op.Name(), c.Size(), got[0], want)
		}
	}
	sum := make([]complex128, 1)
	if err := commtune.Allreduce(ctx, c, []complex128{1i}, sum, commtune.Sum); err != nil || sum[0] != complex(0, float64(c.Size())) {
		return fmt.Errorf("Allreduce of complex128 with sum = %v, %v", sum, err)
	}
	return nil
}

// dupAfterClose closes the world communicator: a communicator derived from
// it fails from then on, Dup included, with ErrClosed. It closes c.
func dupAfterClose(ctx context.Context, c *commtune.Comm) error {
	d, err := c.Dup()
	if err != nil {
		return err
	}
	if err := c.Barrier(ctx); err != nil { // nothing in flight when closing
		return err
	}
	if err := c.Close(); err != nil {
		return err
	}
	if _, err := d.Dup(); !errors.Is(err, commtune.ErrClosed) {
		return fmt.Errorf("Dup of a communicator whose world is closed: %v, want ErrClosed", err)
	}
	if err := d.Send(ctx, nil, 0, 0); !errors.Is(err, commtune.ErrClosed) {
		return fmt.Errorf("Send on a communicator whose world is closed: %v, want ErrClosed", err)
	}
	return nil
}
