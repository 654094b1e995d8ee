package commtune

import (
	"context"
	"fmt"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/observe"
)

// Collective operations. Every rank of the communicator calls the same
// operation with matching arguments (root, sizes, operation), and all
// ranks make their collective calls on a communicator in the same order,
// as MPI requires; calls from several goroutines on one communicator need
// a Dup each. The algorithm comes from the fixed decision table
// (docs/collectives.md), COMMTUNE_COLL_<OP>, or WithAlgorithm. Passing
// the same slice as send and receive buffer works in place. If ctx ends
// during a call, the call returns ctx.Err(); if the ranks' sizes disagree,
// every rank's call returns an error (ErrSizeMismatch or ErrTruncate)
// within about half a second. After either, the communicator's ranks no
// longer agree on where they are: close it.
//
// Each operation has a nonblocking form (Ibcast …) that checks its
// arguments, takes its place in the order of c's collective calls and
// returns a CollRequest; the call proceeds in its own goroutine, and any
// number may be in flight on one communicator.

// Barrier returns once every rank of c has entered it.
func (c *Comm) Barrier(ctx context.Context, opts ...CollOption) error {
	return runNow(ctx)(c.prepare(now(ctx), coll.OpBarrier, coll.Layout{Elem: 1}, nil, nil, nil, true, opts))
}

// Ibarrier starts a barrier and returns at once: its request completes
// once every rank has entered it.
func (c *Comm) Ibarrier(ctx context.Context, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(c.prepare(later, coll.OpBarrier, coll.Layout{Elem: 1}, nil, nil, nil, true, opts))
}

// Bcast copies root's buf into every rank's buf.
func Bcast[T any](ctx context.Context, c *Comm, buf []T, root int, opts ...CollOption) error {
	return runNow(ctx)(bcastCall[T](now(ctx), c, buf, root, opts))
}

// Ibcast starts Bcast and returns at once; the buffers belong to the
// call until its request completes.
func Ibcast[T any](ctx context.Context, c *Comm, buf []T, root int, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(bcastCall[T](later, c, buf, root, opts))
}

func bcastCall[T any](h how, c *Comm, buf []T, root int, opts []CollOption) (*comm.Call, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	if err := c.checkRoot(root); err != nil {
		return nil, err
	}
	l := coll.Layout{Root: root, Bytes: len(buf) * elemSize[T](), Elem: elemSize[T]()}
	return c.prepare(h, coll.OpBcast, l, nil, bytesOf(buf), nil, true, opts)
}

// Reduce combines every rank's send with op, element by element, into
// root's recv (len(send) elements; ignored on other ranks, may be nil).
func Reduce[T any](ctx context.Context, c *Comm, send, recv []T, op Op, root int, opts ...CollOption) error {
	return runNow(ctx)(reduceCall[T](now(ctx), c, send, recv, op, root, opts))
}

// Ireduce starts Reduce and returns at once; the buffers belong to the
// call until its request completes.
func Ireduce[T any](ctx context.Context, c *Comm, send, recv []T, op Op, root int, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(reduceCall[T](later, c, send, recv, op, root, opts))
}

func reduceCall[T any](h how, c *Comm, send, recv []T, op Op, root int, opts []CollOption) (*comm.Call, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	if err := c.checkRoot(root); err != nil {
		return nil, err
	}
	red, err := reducer[T](op)
	if err != nil {
		return nil, err
	}
	var out []byte
	if c.in.Rank() == root {
		if len(recv) != len(send) {
			return nil, fmt.Errorf("commtune: reduce: receive buffer of %d elements for %d sent", len(recv), len(send))
		}
		out = bytesOf(recv)
	}
	l := coll.Layout{Root: root, Bytes: len(send) * elemSize[T](), Elem: elemSize[T]()}
	k, err := c.prepare(h, coll.OpReduce, l, bytesOf(send), out, red, op.commutative, opts)
	if k != nil {
		k.Post = loneLogical[T](op, red, c.Size(), out)
	}
	return k, err
}

// Allreduce combines every rank's send with op, element by element, into
// every rank's recv (of the same length).
func Allreduce[T any](ctx context.Context, c *Comm, send, recv []T, op Op, opts ...CollOption) error {
	return runNow(ctx)(allreduceCall[T](now(ctx), c, send, recv, op, opts))
}

// Iallreduce starts Allreduce and returns at once; the buffers belong to the
// call until its request completes.
func Iallreduce[T any](ctx context.Context, c *Comm, send, recv []T, op Op, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(allreduceCall[T](later, c, send, recv, op, opts))
}

func allreduceCall[T any](h how, c *Comm, send, recv []T, op Op, opts []CollOption) (*comm.Call, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	red, err := reducer[T](op)
	if err != nil {
		return nil, err
	}
	if len(recv) != len(send) {
		return nil, fmt.Errorf("commtune: allreduce: receive buffer of %d elements for %d sent", len(recv), len(send))
	}
	l := coll.Layout{Bytes: len(send) * elemSize[T](), Elem: elemSize[T]()}
	k, err := c.prepare(h, coll.OpAllreduce, l, bytesOf(send), bytesOf(recv), red, op.commutative, opts)
	if k != nil {
		k.Post = loneLogical[T](op, red, c.Size(), bytesOf(recv))
	}
	return k, err
}

// ReduceScatterBlock combines every rank's send with op, element by
// element, and gives rank r block r of the result: send holds Size()
// blocks of len(recv) elements (MPI_Reduce_scatter_block). recv may lie
// in send, e.g. send[r·k:(r+1)·k] on rank r, for a result in place: the
// call reads the whole of send first.
func ReduceScatterBlock[T any](ctx context.Context, c *Comm, send, recv []T, op Op, opts ...CollOption) error {
	return runNow(ctx)(reduceScatterBlockCall[T](now(ctx), c, send, recv, op, opts))
}

// IreduceScatterBlock starts ReduceScatterBlock and returns at once; the
// buffers belong to the call until its request completes.
func IreduceScatterBlock[T any](ctx context.Context, c *Comm, send, recv []T, op Op, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(reduceScatterBlockCall[T](later, c, send, recv, op, opts))
}

func reduceScatterBlockCall[T any](h how, c *Comm, send, recv []T, op Op, opts []CollOption) (*comm.Call, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	red, err := reducer[T](op)
	if err != nil {
		return nil, err
	}
	if len(send) != len(recv)*c.Size() {
		return nil, fmt.Errorf("commtune: reducescatterblock: %d elements to send, want %d ranks × %d", len(send), c.Size(), len(recv))
	}
	l := coll.Layout{Bytes: len(send) * elemSize[T](), Elem: elemSize[T]()}
	k, err := c.prepare(h, coll.OpReduceScatterBlock, l, bytesOf(send), bytesOf(recv), red, op.commutative, opts)
	if k != nil {
		k.Post = loneLogical[T](op, red, c.Size(), bytesOf(recv))
	}
	return k, err
}

// ReduceScatter combines every rank's send with op, element by element,
// and gives rank r its block of the result: the recvCounts[r] elements
// after those of the ranks below it (MPI_Reduce_scatter). Every rank
// passes the same recvCounts; send holds their sum, and recv
// recvCounts[r] elements. recv may lie in send, as for
// ReduceScatterBlock.
func ReduceScatter[T any](ctx context.Context, c *Comm, send, recv []T, recvCounts []int, op Op, opts ...CollOption) error {
	return runNow(ctx)(reduceScatterCall[T](now(ctx), c, send, recv, recvCounts, op, opts))
}

// IreduceScatter starts ReduceScatter and returns at once; the buffers
// belong to the call until its request completes.
func IreduceScatter[T any](ctx context.Context, c *Comm, send, recv []T, recvCounts []int, op Op, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(reduceScatterCall[T](later, c, send, recv, recvCounts, op, opts))
}

func reduceScatterCall[T any](h how, c *Comm, send, recv []T, recvCounts []int, op Op, opts []CollOption) (*comm.Call, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	red, err := reducer[T](op)
	if err != nil {
		return nil, err
	}
	if len(recvCounts) != c.Size() {
		return nil, fmt.Errorf("commtune: reducescatter: %d counts for %d ranks", len(recvCounts), c.Size())
	}
	total := 0
	for r, k := range recvCounts {
		if k < 0 || k > len(send)-total {
			return nil, fmt.Errorf("commtune: reducescatter: rank %d's block (%d elements at %d) lies outside the send buffer of %d", r, k, total, len(send))
		}
		total += k
	}
	if total != len(send) {
		return nil, fmt.Errorf("commtune: reducescatter: the counts add up to %d elements, the send buffer holds %d", total, len(send))
	}
	if me := c.in.Rank(); recvCounts[me] != len(recv) {
		return nil, fmt.Errorf("commtune: reducescatter: this rank's count is %d, its receive buffer %d elements", recvCounts[me], len(recv))
	}
	l := coll.Layout{Bytes: len(send) * elemSize[T](), Elem: elemSize[T](), Counts: recvCounts}
	k, err := c.prepare(h, coll.OpReduceScatter, l, bytesOf(send), bytesOf(recv), red, op.commutative, opts)
	if k != nil {
		k.Post = loneLogical[T](op, red, c.Size(), bytesOf(recv))
	}
	return k, err
}

// Scan combines with op, element by element, the send of ranks 0 … r into
// rank r's recv (of the same length): an inclusive prefix reduction
// (MPI_Scan). Passing the same slice as send and recv works in place.
func Scan[T any](ctx context.Context, c *Comm, send, recv []T, op Op, opts ...CollOption) error {
	return runNow(ctx)(scanCall[T](now(ctx), c, send, recv, op, false, opts))
}

// Iscan starts Scan and returns at once; the buffers belong to the call
// until its request completes.
func Iscan[T any](ctx context.Context, c *Comm, send, recv []T, op Op, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(scanCall[T](later, c, send, recv, op, false, opts))
}

// Exscan combines with op, element by element, the send of ranks 0 … r−1
// into rank r's recv (of the same length): an exclusive prefix reduction
// (MPI_Exscan). Rank 0's recv is left as it was (MPI leaves it
// undefined), so it may be nil there; in place (the same slice as send)
// it keeps rank 0's send.
func Exscan[T any](ctx context.Context, c *Comm, send, recv []T, op Op, opts ...CollOption) error {
	return runNow(ctx)(scanCall[T](now(ctx), c, send, recv, op, true, opts))
}

// Iexscan starts Exscan and returns at once; the buffers belong to the
// call until its request completes.
func Iexscan[T any](ctx context.Context, c *Comm, send, recv []T, op Op, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(scanCall[T](later, c, send, recv, op, true, opts))
}

func scanCall[T any](h how, c *Comm, send, recv []T, op Op, exclusive bool, opts []CollOption) (*comm.Call, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	red, err := reducer[T](op)
	if err != nil {
		return nil, err
	}
	name, o, me := "scan", coll.OpScan, c.in.Rank()
	if exclusive {
		name, o = "exscan", coll.OpExscan
	}
	if len(recv) != len(send) && !(exclusive && me == 0 && len(recv) == 0) {
		return nil, fmt.Errorf("commtune: %s: receive buffer of %d elements for %d sent", name, len(recv), len(send))
	}
	l := coll.Layout{Bytes: len(send) * elemSize[T](), Elem: elemSize[T]()}
	// The result of one rank's contribution alone, Scan's on rank 0 and
	// Exscan's on rank 1, is made logical after the call: not at once.
	alone := !exclusive && me == 0 || exclusive && me == 1
	post := singleLogical[T](op, red, alone, bytesOf(recv))
	if post != nil {
		h.ctx = nil // not at once: the segment's call without a Call runs no Post
	}
	k, err := c.prepare(h, o, l, bytesOf(send), bytesOf(recv), red, op.commutative, opts)
	if k != nil {
		k.Post = post
	}
	return k, err
}

// Scatter gives rank r block r of root's send, which holds Size() blocks
// of len(recv) elements (send is ignored on other ranks, may be nil).
func Scatter[T any](ctx context.Context, c *Comm, send, recv []T, root int, opts ...CollOption) error {
	return runNow(ctx)(scatterCall[T](now(ctx), c, send, recv, root, opts))
}

// Iscatter starts Scatter and returns at once; the buffers belong to the
// call until its request completes.
func Iscatter[T any](ctx context.Context, c *Comm, send, recv []T, root int, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(scatterCall[T](later, c, send, recv, root, opts))
}

func scatterCall[T any](h how, c *Comm, send, recv []T, root int, opts []CollOption) (*comm.Call, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	if err := c.checkRoot(root); err != nil {
		return nil, err
	}
	var in []byte
	if c.in.Rank() == root {
		if len(send) != len(recv)*c.Size() {
			return nil, fmt.Errorf("commtune: scatter: %d elements to send, want %d ranks × %d", len(send), c.Size(), len(recv))
		}
		in = bytesOf(send)
	}
	l := coll.Layout{Root: root, Bytes: len(recv) * elemSize[T](), Elem: elemSize[T]()}
	return c.prepare(h, coll.OpScatter, l, in, bytesOf(recv), nil, true, opts)
}

// Gather collects every rank's send into block r (for rank r) of root's
// recv, which holds Size() blocks of len(send) elements (ignored on other
// ranks, may be nil).
func Gather[T any](ctx context.Context, c *Comm, send, recv []T, root int, opts ...CollOption) error {
	return runNow(ctx)(gatherCall[T](now(ctx), c, send, recv, root, opts))
}

// Igather starts Gather and returns at once; the buffers belong to the
// call until its request completes.
func Igather[T any](ctx context.Context, c *Comm, send, recv []T, root int, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(gatherCall[T](later, c, send, recv, root, opts))
}

func gatherCall[T any](h how, c *Comm, send, recv []T, root int, opts []CollOption) (*comm.Call, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	if err := c.checkRoot(root); err != nil {
		return nil, err
	}
	var out []byte
	if c.in.Rank() == root {
		if len(recv) != len(send)*c.Size() {
			return nil, fmt.Errorf("commtune: gather: receive buffer of %d elements, want %d ranks × %d", len(recv), c.Size(), len(send))
		}
		out = bytesOf(recv)
	}
	l := coll.Layout{Root: root, Bytes: len(send) * elemSize[T](), Elem: elemSize[T]()}
	return c.prepare(h, coll.OpGather, l, bytesOf(send), out, nil, true, opts)
}

// Allgather collects every rank's send into block r (for rank r) of every
// rank's recv, which holds Size() blocks of len(send) elements.
func Allgather[T any](ctx context.Context, c *Comm, send, recv []T, opts ...CollOption) error {
	return runNow(ctx)(allgatherCall[T](now(ctx), c, send, recv, opts))
}

// Iallgather starts Allgather and returns at once; the buffers belong to the
// call until its request completes.
func Iallgather[T any](ctx context.Context, c *Comm, send, recv []T, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(allgatherCall[T](later, c, send, recv, opts))
}

func allgatherCall[T any](h how, c *Comm, send, recv []T, opts []CollOption) (*comm.Call, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	if len(recv) != len(send)*c.Size() {
		return nil, fmt.Errorf("commtune: allgather: receive buffer of %d elements, want %d ranks × %d", len(recv), c.Size(), len(send))
	}
	l := coll.Layout{Bytes: len(send) * elemSize[T](), Elem: elemSize[T]()}
	return c.prepare(h, coll.OpAllgather, l, bytesOf(send), bytesOf(recv), nil, true, opts)
}

// Alltoall sends block d of send to rank d, which stores it as block s
// (for sender s) of its recv. send and recv hold Size() blocks of equal
// length.
func Alltoall[T any](ctx context.Context, c *Comm, send, recv []T, opts ...CollOption) error {
	return runNow(ctx)(alltoallCall[T](now(ctx), c, send, recv, opts))
}

// Ialltoall starts Alltoall and returns at once; the buffers belong to the
// call until its request completes.
func Ialltoall[T any](ctx context.Context, c *Comm, send, recv []T, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(alltoallCall[T](later, c, send, recv, opts))
}

func alltoallCall[T any](h how, c *Comm, send, recv []T, opts []CollOption) (*comm.Call, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	n := c.Size()
	if len(send) != len(recv) || len(send)%n != 0 {
		return nil, fmt.Errorf("commtune: alltoall: %d elements to send and %d to receive, want equal multiples of %d ranks", len(send), len(recv), n)
	}
	l := coll.Layout{Bytes: len(send) / n * elemSize[T](), Elem: elemSize[T]()}
	return c.prepare(h, coll.OpAlltoall, l, bytesOf(send), bytesOf(recv), nil, true, opts)
}

// Scatterv gives rank r counts[r] elements of root's send starting at
// displs[r]. counts, displs and send matter at the root only; each rank
// receives len(recv) elements, which must equal its count.
func Scatterv[T any](ctx context.Context, c *Comm, send []T, counts, displs []int, recv []T, root int, opts ...CollOption) error {
	return runNow(ctx)(scattervCall[T](now(ctx), c, send, counts, displs, recv, root, opts))
}

// Iscatterv starts Scatterv and returns at once; the buffers belong to the
// call until its request completes.
func Iscatterv[T any](ctx context.Context, c *Comm, send []T, counts, displs []int, recv []T, root int, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(scattervCall[T](later, c, send, counts, displs, recv, root, opts))
}

func scattervCall[T any](h how, c *Comm, send []T, counts, displs []int, recv []T, root int, opts []CollOption) (*comm.Call, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	if err := c.checkRoot(root); err != nil {
		return nil, err
	}
	l := coll.Layout{Root: root, Elem: elemSize[T]()}
	var in []byte
	if c.in.Rank() == root {
		if err := c.checkBlocks("scatterv", counts, displs, len(send), "send"); err != nil {
			return nil, err
		}
		if counts[root] != len(recv) {
			return nil, fmt.Errorf("commtune: scatterv: the root's count is %d, its receive buffer %d elements", counts[root], len(recv))
		}
		l.Counts, l.Displs, in = counts, displs, bytesOf(send)
	} else {
		l.Counts = make([]int, c.Size())
		l.Counts[c.in.Rank()] = len(recv)
	}
	return c.prepare(h, coll.OpScatterv, l, in, bytesOf(recv), nil, true, opts)
}

// Gatherv stores rank r's send at displs[r] of root's recv, where it takes
// counts[r] elements. recv, counts and displs matter at the root only.
func Gatherv[T any](ctx context.Context, c *Comm, send, recv []T, counts, displs []int, root int, opts ...CollOption) error {
	return runNow(ctx)(gathervCall[T](now(ctx), c, send, recv, counts, displs, root, opts))
}

// Igatherv starts Gatherv and returns at once; the buffers belong to the
// call until its request completes.
func Igatherv[T any](ctx context.Context, c *Comm, send, recv []T, counts, displs []int, root int, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(gathervCall[T](later, c, send, recv, counts, displs, root, opts))
}

func gathervCall[T any](h how, c *Comm, send, recv []T, counts, displs []int, root int, opts []CollOption) (*comm.Call, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	if err := c.checkRoot(root); err != nil {
		return nil, err
	}
	l := coll.Layout{Root: root, Elem: elemSize[T]()}
	var out []byte
	if c.in.Rank() == root {
		if err := c.checkBlocks("gatherv", counts, displs, len(recv), "receive"); err != nil {
			return nil, err
		}
		if counts[root] != len(send) {
			return nil, fmt.Errorf("commtune: gatherv: the root's count is %d, its send buffer %d elements", counts[root], len(send))
		}
		l.Counts, l.Displs, out = counts, displs, bytesOf(recv)
	} else {
		l.Counts = make([]int, c.Size())
		l.Counts[c.in.Rank()] = len(send)
	}
	return c.prepare(h, coll.OpGatherv, l, bytesOf(send), out, nil, true, opts)
}

// Allgatherv stores rank r's send at displs[r] of every rank's recv,
// where it takes counts[r] elements; every rank passes the same counts and
// displs.
func Allgatherv[T any](ctx context.Context, c *Comm, send, recv []T, counts, displs []int, opts ...CollOption) error {
	return runNow(ctx)(allgathervCall[T](now(ctx), c, send, recv, counts, displs, opts))
}

// Iallgatherv starts Allgatherv and returns at once; the buffers belong to the
// call until its request completes.
func Iallgatherv[T any](ctx context.Context, c *Comm, send, recv []T, counts, displs []int, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(allgathervCall[T](later, c, send, recv, counts, displs, opts))
}

func allgathervCall[T any](h how, c *Comm, send, recv []T, counts, displs []int, opts []CollOption) (*comm.Call, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	if err := c.checkBlocks("allgatherv", counts, displs, len(recv), "receive"); err != nil {
		return nil, err
	}
	if counts[c.in.Rank()] != len(send) {
		return nil, fmt.Errorf("commtune: allgatherv: this rank's count is %d, its send buffer %d elements", counts[c.in.Rank()], len(send))
	}
	l := coll.Layout{Elem: elemSize[T](), Counts: counts, Displs: displs}
	return c.prepare(h, coll.OpAllgatherv, l, bytesOf(send), bytesOf(recv), nil, true, opts)
}

// Alltoallv sends sendCounts[d] elements of send, from sendDispls[d], to
// rank d, which stores what rank s sends at recvDispls[s] of its recv,
// where it takes recvCounts[s] elements.
func Alltoallv[T any](ctx context.Context, c *Comm, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int, opts ...CollOption) error {
	return runNow(ctx)(alltoallvCall[T](now(ctx), c, send, sendCounts, sendDispls, recv, recvCounts, recvDispls, opts))
}

// Ialltoallv starts Alltoallv and returns at once; the buffers belong to the
// call until its request completes.
func Ialltoallv[T any](ctx context.Context, c *Comm, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int, opts ...CollOption) (*CollRequest, error) {
	return start(ctx)(alltoallvCall[T](later, c, send, sendCounts, sendDispls, recv, recvCounts, recvDispls, opts))
}

func alltoallvCall[T any](h how, c *Comm, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int, opts []CollOption) (*comm.Call, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	if err := c.checkBlocks("alltoallv", sendCounts, sendDispls, len(send), "send"); err != nil {
		return nil, err
	}
	if err := c.checkBlocks("alltoallv", recvCounts, recvDispls, len(recv), "receive"); err != nil {
		return nil, err
	}
	if sendCounts[c.in.Rank()] != recvCounts[c.in.Rank()] {
		return nil, fmt.Errorf("commtune: alltoallv: this rank sends itself %d elements but receives %d", sendCounts[c.in.Rank()], recvCounts[c.in.Rank()])
	}
	l := coll.Layout{Elem: elemSize[T](), SendCounts: sendCounts, SendDispls: sendDispls, RecvCounts: recvCounts, RecvDispls: recvDispls}
	return c.prepare(h, coll.OpAlltoallv, l, bytesOf(send), bytesOf(recv), nil, true, opts)
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

// how says how a call is made: by a blocking function (now), which
// prepare may carry out at once, to run later (a nonblocking one), or for
// a persistent request (initing), whose starts run it.
type how struct {
	ctx   context.Context
	init  bool
	quiet bool // not observed (quietly)
}

// now is how a blocking function with ctx makes its call.
func now(ctx context.Context) how { return how{ctx: ctx} }

// quietly is how the library's own blocking collectives (a Halo's
// selection agreeing on its choice …) make their call: unobserved, as part
// of the observed call they serve.
func quietly(ctx context.Context) how { return how{ctx: ctx, quiet: true} }

// later is how a call that runs after its preparation is made.
var later how

// initing is how a persistent request's init makes its call: prepare
// fixes it and returns the Call whose Persistent the request takes.
var initing = how{init: true}

// prepare checks a call and fixes everything about it before any message
// (comm.Comm.Prepare).
// A blocking call (now) that the node segment carries runs here at once,
// with no Call: prepare then returns a nil call and the call's error.
// A persistent request's init (initing) fixes the call instead
// (comm.Comm.Persist).
func (c *Comm) prepare(h how, op coll.Operation, l coll.Layout, in, out []byte, red coll.Reducer, commutative bool, opts []CollOption) (*comm.Call, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if h.init {
		return c.in.Persist(op, l, in, out, red, commutative, readOptions(opts))
	}
	blocking := h.ctx != nil
	var t observe.Token
	if !h.quiet {
		t = c.in.BeginColl(op, blocking)
	}
	if blocking && len(opts) == 0 {
		if ran, err := c.in.RunOnSegment(h.ctx, op, l, in, out, red); ran {
			if t.On() {
				c.in.EndColl(h.ctx, t, &l, true, "", comm.ChosenByTable, err)
			}
			return nil, err
		}
	}
	var o comm.Options
	if len(opts) > 0 {
		o = readOptions(opts)
	}
	k, err := c.in.Prepare(op, l, in, out, red, commutative, o)
	switch {
	case err != nil && t.On():
		c.in.EndColl(h.ctx, t, &l, false, "", "", err)
	case err != nil:
	case blocking:
		k.Observe(t) // ended when it has run
	case t.On():
		// A nonblocking call's own time is its preparation; its Wait is
		// observed apart.
		alg, by := k.Path()
		c.in.EndColl(nil, t, &l, false, alg, by, nil)
	}
	return k, err
}
