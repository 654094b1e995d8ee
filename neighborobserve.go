package commtune

import (
	"context"

	"github.com/commtune/commtune/internal/observe"
)

// The neighbourhood collectives the library observes, as the API names
// them; they count on the neighbourhood's communicator (Neighborhood.Comm).
var (
	opNeighborAllgather   = observe.Register("NeighborAllgather", observe.CatColl)
	opNeighborAllgatherv  = observe.Register("NeighborAllgatherv", observe.CatColl)
	opNeighborAlltoall    = observe.Register("NeighborAlltoall", observe.CatColl)
	opNeighborAlltoallv   = observe.Register("NeighborAlltoallv", observe.CatColl)
	opIneighborAllgather  = observe.Register("IneighborAllgather", observe.CatColl)
	opIneighborAllgatherv = observe.Register("IneighborAllgatherv", observe.CatColl)
	opIneighborAlltoall   = observe.Register("IneighborAlltoall", observe.CatColl)
	opIneighborAlltoallv  = observe.Register("IneighborAlltoallv", observe.CatColl)
	opNeighborWait        = observe.Register("NeighborWait", observe.CatWait)
)

// neighborPath names the path of every neighbourhood collective: a
// message to each destination and from each source.
const neighborPath = "neighbor/pairwise"

// observeNeighbor makes a neighbourhood call of op on n, which sends bytes
// of this rank's: start starts it, and a blocking call (ctx not nil) waits
// for it too. It returns the request of a nonblocking call.
func observeNeighbor(ctx context.Context, n *Neighborhood, op observe.Op, bytes int, start func() (*NeighborRequest, error)) (*NeighborRequest, error) {
	if n == nil || n.comm == nil {
		return start() // which says so
	}
	c := n.comm
	t := c.begin(op)
	q, err := start()
	if ctx != nil && err == nil {
		err = q.wait(ctx)
		q = nil
	}
	endOp(ctx, c.in, t, op, bytes, neighborPath, "table", err)
	return q, err
}

// IneighborAllgather starts NeighborAllgather.
func IneighborAllgather[T Number](n *Neighborhood, send, recv []T) (*NeighborRequest, error) {
	return observeNeighbor(nil, n, opIneighborAllgather, len(send)*elemSize[T](), func() (*NeighborRequest, error) {
		return ineighborAllgather(n, send, recv)
	})
}

// IneighborAllgatherv starts NeighborAllgatherv.
func IneighborAllgatherv[T Number](n *Neighborhood, send, recv []T, counts, displs []int) (*NeighborRequest, error) {
	return observeNeighbor(nil, n, opIneighborAllgatherv, len(send)*elemSize[T](), func() (*NeighborRequest, error) {
		return ineighborAllgatherv(n, send, recv, counts, displs)
	})
}

// IneighborAlltoall starts NeighborAlltoall.
func IneighborAlltoall[T Number](n *Neighborhood, send, recv []T) (*NeighborRequest, error) {
	return observeNeighbor(nil, n, opIneighborAlltoall, len(send)*elemSize[T](), func() (*NeighborRequest, error) {
		return ineighborAlltoall(n, send, recv)
	})
}

// IneighborAlltoallv starts NeighborAlltoallv.
func IneighborAlltoallv[T Number](n *Neighborhood, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int) (*NeighborRequest, error) {
	return observeNeighbor(nil, n, opIneighborAlltoallv, len(send)*elemSize[T](), func() (*NeighborRequest, error) {
		return ineighborAlltoallv(n, send, sendCounts, sendDispls, recv, recvCounts, recvDispls)
	})
}
