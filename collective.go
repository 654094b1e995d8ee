package commtune

import (
	"context"
	"fmt"

	"github.com/commtune/commtune/internal/coll"
)

// Collective operations. Every rank of the communicator calls the same
// operation with matching arguments (root, sizes, operation), and all
// ranks make their collective calls on a communicator in the same order,
// as MPI requires; calls from several goroutines on one communicator need
// a Dup each. The algorithm comes from the fixed decision table
// (docs/collectives.md), COMMTUNE_COLL_<OP>, or WithAlgorithm. Passing
// the same slice as send and receive buffer works in place. If ctx ends
// during a call, the call returns ctx.Err() and the communicator's ranks
// no longer agree on where they are: close it.

// Barrier returns once every rank of c has entered it.
func (c *Comm) Barrier(ctx context.Context, opts ...CollOption) error {
	return c.collective(ctx, coll.OpBarrier, coll.Layout{Elem: 1}, nil, nil, nil, true, opts)
}

// Bcast copies root's buf into every rank's buf.
func Bcast[T Number](ctx context.Context, c *Comm, buf []T, root int, opts ...CollOption) error {
	if err := c.checkRoot(root); err != nil {
		return err
	}
	l := coll.Layout{Root: root, Bytes: len(buf) * elemSize[T](), Elem: elemSize[T]()}
	return c.collective(ctx, coll.OpBcast, l, nil, Bytes(buf), nil, true, opts)
}

// Reduce combines every rank's send with op, element by element, into
// root's recv (len(send) elements; ignored on other ranks, may be nil).
func Reduce[T Number](ctx context.Context, c *Comm, send, recv []T, op Op, root int, opts ...CollOption) error {
	if err := c.checkRoot(root); err != nil {
		return err
	}
	red, err := reducer[T](op)
	if err != nil {
		return err
	}
	var out []byte
	if c.rank == root {
		if len(recv) != len(send) {
			return fmt.Errorf("commtune: reduce: receive buffer of %d elements for %d sent", len(recv), len(send))
		}
		out = Bytes(recv)
	}
	l := coll.Layout{Root: root, Bytes: len(send) * elemSize[T](), Elem: elemSize[T]()}
	return c.collective(ctx, coll.OpReduce, l, Bytes(send), out, red, op.commutative, opts)
}

// Allreduce combines every rank's send with op, element by element, into
// every rank's recv (of the same length).
func Allreduce[T Number](ctx context.Context, c *Comm, send, recv []T, op Op, opts ...CollOption) error {
	red, err := reducer[T](op)
	if err != nil {
		return err
	}
	if len(recv) != len(send) {
		return fmt.Errorf("commtune: allreduce: receive buffer of %d elements for %d sent", len(recv), len(send))
	}
	l := coll.Layout{Bytes: len(send) * elemSize[T](), Elem: elemSize[T]()}
	return c.collective(ctx, coll.OpAllreduce, l, Bytes(send), Bytes(recv), red, op.commutative, opts)
}

// Scatter gives rank r block r of root's send, which holds Size() blocks
// of len(recv) elements (send is ignored on other ranks, may be nil).
func Scatter[T Number](ctx context.Context, c *Comm, send, recv []T, root int, opts ...CollOption) error {
	if err := c.checkRoot(root); err != nil {
		return err
	}
	var in []byte
	if c.rank == root {
		if len(send) != len(recv)*c.Size() {
			return fmt.Errorf("commtune: scatter: %d elements to send, want %d ranks × %d", len(send), c.Size(), len(recv))
		}
		in = Bytes(send)
	}
	l := coll.Layout{Root: root, Bytes: len(recv) * elemSize[T](), Elem: elemSize[T]()}
	return c.collective(ctx, coll.OpScatter, l, in, Bytes(recv), nil, true, opts)
}

// Gather collects every rank's send into block r (for rank r) of root's
// recv, which holds Size() blocks of len(send) elements (ignored on other
// ranks, may be nil).
func Gather[T Number](ctx context.Context, c *Comm, send, recv []T, root int, opts ...CollOption) error {
	if err := c.checkRoot(root); err != nil {
		return err
	}
	var out []byte
	if c.rank == root {
		if len(recv) != len(send)*c.Size() {
			return fmt.Errorf("commtune: gather: receive buffer of %d elements, want %d ranks × %d", len(recv), c.Size(), len(send))
		}
		out = Bytes(recv)
	}
	l := coll.Layout{Root: root, Bytes: len(send) * elemSize[T](), Elem: elemSize[T]()}
	return c.collective(ctx, coll.OpGather, l, Bytes(send), out, nil, true, opts)
}

// Allgather collects every rank's send into block r (for rank r) of every
// rank's recv, which holds Size() blocks of len(send) elements.
func Allgather[T Number](ctx context.Context, c *Comm, send, recv []T, opts ...CollOption) error {
	if len(recv) != len(send)*c.Size() {
		return fmt.Errorf("commtune: allgather: receive buffer of %d elements, want %d ranks × %d", len(recv), c.Size(), len(send))
	}
	l := coll.Layout{Bytes: len(send) * elemSize[T](), Elem: elemSize[T]()}
	return c.collective(ctx, coll.OpAllgather, l, Bytes(send), Bytes(recv), nil, true, opts)
}

// Alltoall sends block d of send to rank d, which stores it as block s
// (for sender s) of its recv. send and recv hold Size() blocks of equal
// length.
func Alltoall[T Number](ctx context.Context, c *Comm, send, recv []T, opts ...CollOption) error {
	n := c.Size()
	if len(send) != len(recv) || len(send)%n != 0 {
		return fmt.Errorf("commtune: alltoall: %d elements to send and %d to receive, want equal multiples of %d ranks", len(send), len(recv), n)
	}
	l := coll.Layout{Bytes: len(send) / n * elemSize[T](), Elem: elemSize[T]()}
	return c.collective(ctx, coll.OpAlltoall, l, Bytes(send), Bytes(recv), nil, true, opts)
}

// Scatterv gives rank r counts[r] elements of root's send starting at
// displs[r]. counts, displs and send matter at the root only; each rank
// receives len(recv) elements, which must equal its count.
func Scatterv[T Number](ctx context.Context, c *Comm, send []T, counts, displs []int, recv []T, root int, opts ...CollOption) error {
	if err := c.checkRoot(root); err != nil {
		return err
	}
	l := coll.Layout{Root: root, Elem: elemSize[T]()}
	var in []byte
	if c.rank == root {
		if err := c.checkBlocks("scatterv", counts, displs, len(send), "send"); err != nil {
			return err
		}
		if counts[root] != len(recv) {
			return fmt.Errorf("commtune: scatterv: the root's count is %d, its receive buffer %d elements", counts[root], len(recv))
		}
		l.Counts, l.Displs, in = counts, displs, Bytes(send)
	} else {
		l.Counts = make([]int, c.Size())
		l.Counts[c.rank] = len(recv)
	}
	return c.collective(ctx, coll.OpScatterv, l, in, Bytes(recv), nil, true, opts)
}

// Gatherv stores rank r's send at displs[r] of root's recv, where it takes
// counts[r] elements. recv, counts and displs matter at the root only.
func Gatherv[T Number](ctx context.Context, c *Comm, send, recv []T, counts, displs []int, root int, opts ...CollOption) error {
	if err := c.checkRoot(root); err != nil {
		return err
	}
	l := coll.Layout{Root: root, Elem: elemSize[T]()}
	var out []byte
	if c.rank == root {
		if err := c.checkBlocks("gatherv", counts, displs, len(recv), "receive"); err != nil {
			return err
		}
		if counts[root] != len(send) {
			return fmt.Errorf("commtune: gatherv: the root's count is %d, its send buffer %d elements", counts[root], len(send))
		}
		l.Counts, l.Displs, out = counts, displs, Bytes(recv)
	} else {
		l.Counts = make([]int, c.Size())
		l.Counts[c.rank] = len(send)
	}
	return c.collective(ctx, coll.OpGatherv, l, Bytes(send), out, nil, true, opts)
}

// Allgatherv stores rank r's send at displs[r] of every rank's recv,
// where it takes counts[r] elements; every rank passes the same counts and
// displs.
func Allgatherv[T Number](ctx context.Context, c *Comm, send, recv []T, counts, displs []int, opts ...CollOption) error {
	if err := c.checkBlocks("allgatherv", counts, displs, len(recv), "receive"); err != nil {
		return err
	}
	if counts[c.rank] != len(send) {
		return fmt.Errorf("commtune: allgatherv: this rank's count is %d, its send buffer %d elements", counts[c.rank], len(send))
	}
	l := coll.Layout{Elem: elemSize[T](), Counts: counts, Displs: displs}
	return c.collective(ctx, coll.OpAllgatherv, l, Bytes(send), Bytes(recv), nil, true, opts)
}

// Alltoallv sends sendCounts[d] elements of send, from sendDispls[d], to
// rank d, which stores what rank s sends at recvDispls[s] of its recv,
// where it takes recvCounts[s] elements.
func Alltoallv[T Number](ctx context.Context, c *Comm, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int, opts ...CollOption) error {
	if err := c.checkBlocks("alltoallv", sendCounts, sendDispls, len(send), "send"); err != nil {
		return err
	}
	if err := c.checkBlocks("alltoallv", recvCounts, recvDispls, len(recv), "receive"); err != nil {
		return err
	}
	if sendCounts[c.rank] != recvCounts[c.rank] {
		return fmt.Errorf("commtune: alltoallv: this rank sends itself %d elements but receives %d", sendCounts[c.rank], recvCounts[c.rank])
	}
	l := coll.Layout{Elem: elemSize[T](), SendCounts: sendCounts, SendDispls: sendDispls, RecvCounts: recvCounts, RecvDispls: recvDispls}
	return c.collective(ctx, coll.OpAlltoallv, l, Bytes(send), Bytes(recv), nil, true, opts)
}

func (c *Comm) checkRoot(root int) error {
	if err := c.check(); err != nil {
		return err
	}
	if root < 0 || root >= c.Size() {
		return fmt.Errorf("commtune: root %d out of range [0, %d)", root, c.Size())
	}
	return nil
}

// checkBlocks verifies per-rank counts and displacements against a buffer
// of n elements.
func (c *Comm) checkBlocks(op string, counts, displs []int, n int, which string) error {
	if err := c.check(); err != nil {
		return err
	}
	if len(counts) != c.Size() || len(displs) != c.Size() {
		return fmt.Errorf("commtune: %s: %d counts and %d displacements for %d ranks", op, len(counts), len(displs), c.Size())
	}
	for r := range counts {
		if counts[r] < 0 || displs[r] < 0 || displs[r] > n-counts[r] {
			return fmt.Errorf("commtune: %s: rank %d's block (%d elements at %d) lies outside the %s buffer of %d", op, r, counts[r], displs[r], which, n)
		}
	}
	return nil
}
