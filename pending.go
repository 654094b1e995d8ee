package commtune

// Pending is a request of any kind under way — a point-to-point *Request, a
// collective *CollRequest, a *NeighborRequest, a started persistent request
// — so that calls over sets of requests (TestAll, TestAny, TestSome,
// WaitSome, WaitAll, WaitAny) take them alike. Only this package's request
// types implement it. A kind whose own wait drives progress (polls the
// rails) also implements waiter (requestset.go); others are waited for on
// Done.
type Pending interface {
	// Done returns a channel closed when the request completes.
	Done() <-chan struct{}
	// outcome reports whether the request has completed and, if so, its
	// status (zero for a collective) and error.
	outcome() (Status, bool, error)
}
