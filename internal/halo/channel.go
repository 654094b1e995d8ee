package halo

import (
	"context"

	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
)

// Channel is what an Exec needs of its communicator, ranks being ranks of
// that communicator: two-sided messages (of a contiguous buffer, or in
// place as a list of segments), one-sided exposures, puts and reads, and
// waits that watch the exchange, so that a peer's failure or a
// disagreement ends them (see Exec). The communicator implements it; the
// executor knows nothing else of it.
type Channel interface {
	// Rank is this rank's.
	Rank() int
	// Isend and Irecv start a message to or from peer with tag: of segs
	// in place when segs is not nil, else of buf.
	Isend(peer, tag int, segs [][]byte, buf []byte) (*core.Request, error)
	Irecv(peer, tag int, segs [][]byte, buf []byte) (*core.Request, error)
	// Expose exposes segs to one Put of peer with tag; Put puts segs into
	// the region peer exposes with tag. They match in a context of their
	// own, apart from the messages'.
	Expose(peer, tag int, segs [][]byte) (*core.Request, error)
	Put(peer, tag int, segs [][]byte) (*core.Request, error)
	// ReadSpans reads peer's memory at src into dst; CanRead reports
	// whether this rank can read peer's memory, ReadableBy whether peer
	// may read this rank's.
	ReadSpans(peer int, dst [][]byte, src []driver.Span) error
	CanRead(peer int) bool
	ReadableBy(peer int) bool
	// Await waits for r as a blocking call does, watching the exchange;
	// when it must end (a peer left it, or one of others failed), r is
	// withdrawn if it still can be and the reason returned. Status.Count
	// is what r moved.
	Await(ctx context.Context, r *core.Request, others []*core.Request) (core.Status, error)
	// Probe waits, watching the exchange, until a message from peer with
	// tag can be received, and describes it.
	Probe(ctx context.Context, peer, tag int) (core.Status, error)
}

// Grid is where this rank sits on its Cartesian process grid: what a
// pair exchange orders its transfers by (pairOrder).
type Grid struct {
	Coords, Dims []int
	Periods      []bool
}
