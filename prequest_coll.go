package commtune

import (
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/comm"
)

// Persistent collective calls (MPI-4's MPI_Allreduce_init and the rest):
// each …Init checks its arguments as the blocking call does and fixes,
// once, the call's algorithm and plan; each Start of the request it
// returns runs the call on the buffers given here, whose contents the
// caller changes between starts. An init passes no message and waits for
// no rank; every rank must make it, with matching arguments, and start
// the request in the same order as its other collective calls on c.
//
// The algorithm is the one a nonblocking call would run (WithAlgorithm,
// COMMTUNE_COLL_<OP>, or the decision tables), never the lottery's, which
// could switch it between starts: every rank runs the same one at every
// start, and ranks that chose differently (a different option or
// configuration) fail the start with ErrSizeMismatch. WithChoice's
// destination is filled at every successful start.
//
// A start of a small call among ranks of one node publishes this rank's
// part at once and leaves reading the others' parts to Wait, in the
// waiter's goroutine: back to back, a start and its wait cost less than
// the blocking call. Other starts hand their call to a goroutine of its
// own, as nonblocking calls do, unless a Wait (whose context never ends)
// comes first and runs it itself.

// initReq wraps a persistent call prepared for c (initing).
func initReq(k *comm.Call, err error) (*Prequest, error) {
	if err != nil {
		return nil, err
	}
	p := k.Persistent()
	return &Prequest{coll: p, what: string(p.Operation())}, nil
}

// BarrierInit makes a persistent Barrier (MPI_Barrier_init).
func (c *Comm) BarrierInit(opts ...CollOption) (*Prequest, error) {
	return initReq(c.prepare(initing, coll.OpBarrier, coll.Layout{Elem: 1}, nil, nil, nil, true, opts))
}

// BcastInit makes a persistent Bcast of buf from root (MPI_Bcast_init).
func BcastInit[T any](c *Comm, buf []T, root int, opts ...CollOption) (*Prequest, error) {
	return initReq(bcastCall[T](initing, c, buf, root, opts))
}

// ReduceInit makes a persistent Reduce of send into root's recv with op
// (MPI_Reduce_init).
func ReduceInit[T any](c *Comm, send, recv []T, op Op, root int, opts ...CollOption) (*Prequest, error) {
	return initReq(reduceCall[T](initing, c, send, recv, op, root, opts))
}

// AllreduceInit makes a persistent Allreduce of send into recv with op
// (MPI_Allreduce_init).
func AllreduceInit[T any](c *Comm, send, recv []T, op Op, opts ...CollOption) (*Prequest, error) {
	return initReq(allreduceCall[T](initing, c, send, recv, op, opts))
}

// ReduceScatterBlockInit makes a persistent ReduceScatterBlock
// (MPI_Reduce_scatter_block_init).
func ReduceScatterBlockInit[T any](c *Comm, send, recv []T, op Op, opts ...CollOption) (*Prequest, error) {
	return initReq(reduceScatterBlockCall[T](initing, c, send, recv, op, opts))
}

// ReduceScatterInit makes a persistent ReduceScatter
// (MPI_Reduce_scatter_init); recvCounts is read here, once.
func ReduceScatterInit[T any](c *Comm, send, recv []T, recvCounts []int, op Op, opts ...CollOption) (*Prequest, error) {
	return initReq(reduceScatterCall[T](initing, c, send, recv, recvCounts, op, opts))
}

// ScanInit makes a persistent Scan (MPI_Scan_init).
func ScanInit[T any](c *Comm, send, recv []T, op Op, opts ...CollOption) (*Prequest, error) {
	return initReq(scanCall[T](initing, c, send, recv, op, false, opts))
}

// ExscanInit makes a persistent Exscan (MPI_Exscan_init).
func ExscanInit[T any](c *Comm, send, recv []T, op Op, opts ...CollOption) (*Prequest, error) {
	return initReq(scanCall[T](initing, c, send, recv, op, true, opts))
}

// ScatterInit makes a persistent Scatter from root (MPI_Scatter_init).
func ScatterInit[T any](c *Comm, send, recv []T, root int, opts ...CollOption) (*Prequest, error) {
	return initReq(scatterCall[T](initing, c, send, recv, root, opts))
}

// GatherInit makes a persistent Gather to root (MPI_Gather_init).
func GatherInit[T any](c *Comm, send, recv []T, root int, opts ...CollOption) (*Prequest, error) {
	return initReq(gatherCall[T](initing, c, send, recv, root, opts))
}

// AllgatherInit makes a persistent Allgather (MPI_Allgather_init).
func AllgatherInit[T any](c *Comm, send, recv []T, opts ...CollOption) (*Prequest, error) {
	return initReq(allgatherCall[T](initing, c, send, recv, opts))
}

// AlltoallInit makes a persistent Alltoall (MPI_Alltoall_init).
func AlltoallInit[T any](c *Comm, send, recv []T, opts ...CollOption) (*Prequest, error) {
	return initReq(alltoallCall[T](initing, c, send, recv, opts))
}

// ScattervInit makes a persistent Scatterv from root (MPI_Scatterv_init);
// counts and displs are read here, once.
func ScattervInit[T any](c *Comm, send []T, counts, displs []int, recv []T, root int, opts ...CollOption) (*Prequest, error) {
	return initReq(scattervCall[T](initing, c, send, counts, displs, recv, root, opts))
}

// GathervInit makes a persistent Gatherv to root (MPI_Gatherv_init);
// counts and displs are read here, once.
func GathervInit[T any](c *Comm, send, recv []T, counts, displs []int, root int, opts ...CollOption) (*Prequest, error) {
	return initReq(gathervCall[T](initing, c, send, recv, counts, displs, root, opts))
}

// AllgathervInit makes a persistent Allgatherv (MPI_Allgatherv_init);
// counts and displs are read here, once.
func AllgathervInit[T any](c *Comm, send, recv []T, counts, displs []int, opts ...CollOption) (*Prequest, error) {
	return initReq(allgathervCall[T](initing, c, send, recv, counts, displs, opts))
}

// AlltoallvInit makes a persistent Alltoallv (MPI_Alltoallv_init); the
// counts and displacements are read here, once.
func AlltoallvInit[T any](c *Comm, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int, opts ...CollOption) (*Prequest, error) {
	return initReq(alltoallvCall[T](initing, c, send, sendCounts, sendDispls, recv, recvCounts, recvDispls, opts))
}
