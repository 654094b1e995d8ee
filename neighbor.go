package commtune

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/commtune/commtune/internal/core"
)

// Neighbourhood collectives (MPI-3's MPI_Neighbor_*): each rank exchanges
// with its Neighborhood only — sends to its destinations, receives from
// its sources, in list order. A ProcNull neighbour is skipped (its block
// of the receive buffer is left as it was). A rank listed several times
// gets one block per listing: in a Neighborhood the k-th send to a rank
// matches that rank's k-th receive from the sender; in a Cart's
// neighbourhood the block a rank sends toward +d arrives in its
// neighbour's −d block, as MPI-4 defines for periodic dimensions of extent
// 1 or 2. The traffic has a context of its own: it never matches the
// communicator's other messages.
//
// Either list may be empty (MPI's in- or out-degree 0): a rank with no
// destinations sends nothing, so no rank may list it as a source, and one
// with no sources receives nothing, so no rank may list it as a
// destination. NeighborAllgather and NeighborAlltoall infer the block
// size from the buffer lengths, so a side with no peers takes it from the
// other side, and its own buffer must be empty (NeighborAllgather's send
// excepted, being one block for all destinations, not one each). A
// length that is not a whole number of blocks is an error, returned
// before anything is sent. The v forms take one count and one
// displacement per neighbour, so none for an empty list.

// NeighborRequest is a neighbourhood collective under way (the I… forms).
type NeighborRequest struct {
	reqs []*core.Request
	n    *Neighborhood
	// done is Done's channel, made at its first call (once): Wait and
	// Test need none.
	once sync.Once
	done chan struct{}
}

// Wait waits until the exchange is complete and returns its first error.
// If ctx ends first, it returns ctx.Err() and the exchange goes on.
func (q *NeighborRequest) Wait(ctx context.Context) error {
	if q == nil {
		return errNilRequest
	}
	c := q.n.comm
	t := c.begin(opNeighborWait)
	err := q.waitAll(ctx)
	endCall(ctx, c.in, t, opNeighborWait, "", "", err)
	return err
}

// waitAll is Wait, unobserved.
func (q *NeighborRequest) waitAll(ctx context.Context) error {
	var errs []error
	for _, r := range q.reqs {
		if _, err := r.Wait(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Test reports whether the exchange is complete, and its error if so.
func (q *NeighborRequest) Test() (bool, error) {
	if q == nil {
		return true, errNilRequest
	}
	var errs []error
	for _, r := range q.reqs {
		_, done, err := r.Test()
		if !done {
			return false, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return true, errors.Join(errs...)
}

// Done returns a channel closed when the exchange is complete (already
// closed for a nil request), for use in select and by WaitAny and
// WaitSome. Its first call starts a goroutine that waits for the
// exchange's messages, unless they are all complete already.
func (q *NeighborRequest) Done() <-chan struct{} {
	if q == nil {
		return closedChan
	}
	q.once.Do(func() {
		if done, _ := q.Test(); done {
			q.done = closedChan
			return
		}
		q.done = make(chan struct{})
		go func() {
			// Every message completes, if not with its data then with
			// its peer's loss or the engine's close.
			for _, r := range q.reqs {
				<-r.Done()
			}
			close(q.done)
		}()
	})
	return q.done
}

// outcome is Test, for Pending: a neighbourhood collective has no
// status.
func (q *NeighborRequest) outcome() (Status, bool, error) {
	done, err := q.Test()
	return Status{}, done, err
}

// wait is Wait, which waits on each message as a point-to-point request
// does, for the calls over sets of requests (waiter).
func (q *NeighborRequest) wait(ctx context.Context) error { return q.waitAll(ctx) }

// tags returns the tag of the send to destination slot j and of the
// receive from source slot i. In a Neighborhood every message has tag 0
// and order matches them. A Cart's slots are 2d (the −d neighbour) and
// 2d+1 (+d): a send carries its own slot, and a receive takes the slot the
// neighbour sent it from, the opposite one.
func (n *Neighborhood) sendTag(j int) int {
	if n.cart {
		return j
	}
	return 0
}

func (n *Neighborhood) recvTag(i int) int {
	if n.cart {
		return i ^ 1
	}
	return 0
}

// exchange posts the receives of recv's blocks from the sources and the
// sends of send's blocks to the destinations (each block a byte range
// given by its count and displacement), and returns the requests.
func (n *Neighborhood) exchange(send []byte, sc, sd []int, recv []byte, rc, rd []int) (*NeighborRequest, error) {
	if n == nil || n.comm == nil {
		return nil, errors.New("commtune: nil neighbourhood")
	}
	c := n.comm.in
	q := &NeighborRequest{n: n}
	fail := func(err error) (*NeighborRequest, error) {
		for _, r := range q.reqs {
			r.Cancel()
		}
		return nil, err
	}
	for i, src := range n.sources {
		if src == ProcNull {
			continue
		}
		r, err := c.NeighborIrecv(recv[rd[i]:rd[i]+rc[i]], src, n.recvTag(i))
		if err != nil {
			return fail(err)
		}
		q.reqs = append(q.reqs, r)
	}
	for j, dst := range n.dests {
		if dst == ProcNull {
			continue
		}
		r, err := c.NeighborIsend(send[sd[j]:sd[j]+sc[j]], dst, n.sendTag(j))
		if err != nil {
			return fail(err)
		}
		q.reqs = append(q.reqs, r)
	}
	return q, nil
}

// evenBlocks returns k blocks of size bytes each, back to back.
func evenBlocks(k, size int) (counts, displs []int) {
	counts, displs = make([]int, k), make([]int, k)
	for i := range counts {
		counts[i], displs[i] = size, i*size
	}
	return counts, displs
}

// sameBlock returns k blocks that are all [0, size): Allgather's send.
func sameBlock(k, size int) (counts, displs []int) {
	counts, displs = make([]int, k), make([]int, k)
	for i := range counts {
		counts[i] = size
	}
	return counts, displs
}

// byteBlocks converts element counts and displacements to bytes, checking
// that each block lies in a buffer of n elements.
func byteBlocks(counts, displs []int, k, n, elem int, which string) ([]int, []int, error) {
	if len(counts) != k || len(displs) != k {
		return nil, nil, fmt.Errorf("commtune: %s: %d counts and %d displacements for %d neighbours", which, len(counts), len(displs), k)
	}
	bc, bd := make([]int, k), make([]int, k)
	for i := range counts {
		if counts[i] < 0 || displs[i] < 0 || displs[i] > n || counts[i] > n-displs[i] {
			return nil, nil, fmt.Errorf("commtune: %s: block %d (%d elements at %d) outside the buffer of %d", which, i, counts[i], displs[i], n)
		}
		bc[i], bd[i] = counts[i]*elem, displs[i]*elem
	}
	return bc, bd, nil
}

// allgatherBlock returns NeighborAllgather's block size in elements: the
// length of send, the one block every destination gets, of which recv
// holds one per source. Only a rank with no destinations may leave send
// empty and take the size from recv instead, since such a rank sends
// nothing: with MPI's explicit counts it would still pass one, which
// here is the length of recv over the sources.
func allgatherBlock(send, kd, recv, ks int) (int, error) {
	switch {
	case ks == 0 && recv != 0:
		return 0, fmt.Errorf("commtune: NeighborAllgather: receive of %d elements for 0 sources: want an empty buffer", recv)
	case ks == 0:
		return send, nil
	case kd == 0 && send == 0:
		if recv%ks != 0 {
			return 0, fmt.Errorf("commtune: NeighborAllgather: receive of %d elements is not a whole number of blocks for %d sources", recv, ks)
		}
		return recv / ks, nil
	case recv%ks != 0 || recv/ks != send: // not recv != ks*send, which may overflow
		return 0, fmt.Errorf("commtune: NeighborAllgather: receive of %d elements for %d sources of %d", recv, ks, send)
	}
	return send, nil
}

// ineighborAllgather starts NeighborAllgather, unobserved.
func ineighborAllgather[T Number](n *Neighborhood, send, recv []T) (*NeighborRequest, error) {
	if n == nil {
		return nil, errors.New("commtune: nil neighbourhood")
	}
	b, err := allgatherBlock(len(send), len(n.dests), len(recv), len(n.sources))
	if err != nil {
		return nil, err
	}
	es := elemSize[T]()
	sc, sd := sameBlock(len(n.dests), b*es)
	rc, rd := evenBlocks(len(n.sources), b*es)
	return n.exchange(Bytes(send), sc, sd, Bytes(recv), rc, rd)
}

// NeighborAllgather sends send to every destination and stores what
// source i sent in block i of recv (len(send) elements each). With no
// sources recv must be empty. With no destinations send is not sent and
// may be empty, the block size then being len(recv) over the sources.
func NeighborAllgather[T Number](ctx context.Context, n *Neighborhood, send, recv []T) error {
	_, err := observeNeighbor(ctx, n, opNeighborAllgather, len(send)*elemSize[T](), func() (*NeighborRequest, error) {
		return ineighborAllgather(n, send, recv)
	})
	return err
}

// ineighborAllgatherv starts NeighborAllgatherv, unobserved.
func ineighborAllgatherv[T Number](n *Neighborhood, send, recv []T, counts, displs []int) (*NeighborRequest, error) {
	if n == nil {
		return nil, errors.New("commtune: nil neighbourhood")
	}
	es := elemSize[T]()
	rc, rd, err := byteBlocks(counts, displs, len(n.sources), len(recv), es, "NeighborAllgatherv")
	if err != nil {
		return nil, err
	}
	sc, sd := sameBlock(len(n.dests), len(send)*es)
	return n.exchange(Bytes(send), sc, sd, Bytes(recv), rc, rd)
}

// NeighborAllgatherv sends send to every destination and stores what
// source i sent at displs[i] of recv, where it takes counts[i] elements.
// counts and displs have one entry per source: none when there are no
// sources, and then recv is left as it was.
func NeighborAllgatherv[T Number](ctx context.Context, n *Neighborhood, send, recv []T, counts, displs []int) error {
	_, err := observeNeighbor(ctx, n, opNeighborAllgatherv, len(send)*elemSize[T](), func() (*NeighborRequest, error) {
		return ineighborAllgatherv(n, send, recv, counts, displs)
	})
	return err
}

// ineighborAlltoall starts NeighborAlltoall, unobserved.
func ineighborAlltoall[T Number](n *Neighborhood, send, recv []T) (*NeighborRequest, error) {
	if n == nil {
		return nil, errors.New("commtune: nil neighbourhood")
	}
	b, err := alltoallBlock(len(send), len(n.dests), len(recv), len(n.sources))
	if err != nil {
		return nil, err
	}
	es := elemSize[T]()
	sc, sd := evenBlocks(len(n.dests), b*es)
	rc, rd := evenBlocks(len(n.sources), b*es)
	return n.exchange(Bytes(send), sc, sd, Bytes(recv), rc, rd)
}

// alltoallBlock returns NeighborAlltoall's block size in elements: send
// holds one block per destination and recv one per source. A side with no
// peers has no blocks, so its buffer must be empty and the size comes
// from the other side (MPI passes it as a count; here only the buffers
// carry it). With neither, there is no block and the size is 0.
func alltoallBlock(send, kd, recv, ks int) (int, error) {
	switch {
	case kd == 0 && send != 0:
		return 0, fmt.Errorf("commtune: NeighborAlltoall: send of %d elements for 0 destinations: want an empty buffer", send)
	case ks == 0 && recv != 0:
		return 0, fmt.Errorf("commtune: NeighborAlltoall: receive of %d elements for 0 sources: want an empty buffer", recv)
	case kd > 0 && send%kd != 0:
		return 0, fmt.Errorf("commtune: NeighborAlltoall: send of %d elements is not a whole number of blocks for %d destinations", send, kd)
	case ks > 0 && recv%ks != 0:
		return 0, fmt.Errorf("commtune: NeighborAlltoall: receive of %d elements is not a whole number of blocks for %d sources", recv, ks)
	case kd > 0 && ks > 0 && send/kd != recv/ks:
		return 0, fmt.Errorf("commtune: NeighborAlltoall: %d elements for %d destinations and %d for %d sources: want equal blocks", send, kd, recv, ks)
	case kd > 0:
		return send / kd, nil
	case ks > 0:
		return recv / ks, nil
	}
	return 0, nil
}

// NeighborAlltoall sends block j of send to destination j and stores what
// source i sent in block i of recv; every block has the same size. With no
// destinations send must be empty and the block size is len(recv) over the
// sources; with no sources recv must be empty and it is len(send) over the
// destinations; with neither both must be empty.
func NeighborAlltoall[T Number](ctx context.Context, n *Neighborhood, send, recv []T) error {
	_, err := observeNeighbor(ctx, n, opNeighborAlltoall, len(send)*elemSize[T](), func() (*NeighborRequest, error) {
		return ineighborAlltoall(n, send, recv)
	})
	return err
}

// ineighborAlltoallv starts NeighborAlltoallv, unobserved.
func ineighborAlltoallv[T Number](n *Neighborhood, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int) (*NeighborRequest, error) {
	if n == nil {
		return nil, errors.New("commtune: nil neighbourhood")
	}
	es := elemSize[T]()
	sc, sd, err := byteBlocks(sendCounts, sendDispls, len(n.dests), len(send), es, "NeighborAlltoallv send")
	if err != nil {
		return nil, err
	}
	rc, rd, err := byteBlocks(recvCounts, recvDispls, len(n.sources), len(recv), es, "NeighborAlltoallv receive")
	if err != nil {
		return nil, err
	}
	return n.exchange(Bytes(send), sc, sd, Bytes(recv), rc, rd)
}

// NeighborAlltoallv sends sendCounts[j] elements at sendDispls[j] of send
// to destination j and stores what source i sent at recvDispls[i] of
// recv, where it takes recvCounts[i] elements. The counts and
// displacements have one entry per neighbour: none for an empty list, and
// then that side's buffer is neither read nor written.
func NeighborAlltoallv[T Number](ctx context.Context, n *Neighborhood, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int) error {
	_, err := observeNeighbor(ctx, n, opNeighborAlltoallv, len(send)*elemSize[T](), func() (*NeighborRequest, error) {
		return ineighborAlltoallv(n, send, sendCounts, sendDispls, recv, recvCounts, recvDispls)
	})
	return err
}
