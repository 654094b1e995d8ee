package commtune

import (
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/core"
)

var (
	// ErrTruncate is returned (wrapped in a *TruncateError) by a receive
	// whose message was longer than its buffer; the buffer holds the first
	// bytes of the message.
	ErrTruncate = core.ErrTruncate
	// ErrPeerLost is returned (wrapped in a *PeerLostError naming the rank)
	// by operations that need a rank that crashed or closed.
	ErrPeerLost = core.ErrPeerLost
	// ErrClosed is returned by operations on a closed communicator.
	ErrClosed = core.ErrClosed
	// ErrCanceled is returned by a cancelled request, and (wrapped in a
	// *WithdrawnError naming the sender) by a receive whose matched sender
	// cancelled its send.
	ErrCanceled = core.ErrCanceled
	// ErrNotCommutative is returned when an algorithm that combines
	// contributions out of rank order is forced (WithAlgorithm) on a
	// non-commutative reduction.
	ErrNotCommutative = coll.ErrNotCommutative
	// ErrSizeMismatch is returned by a collective call whose ranks
	// disagree on the sizes of what they exchange.
	ErrSizeMismatch = core.ErrSizeMismatch
)

// TruncateError is the error of a truncated receive: errors.Is(err,
// ErrTruncate) holds, and it says how long the message was.
type TruncateError = core.TruncateError

// WithdrawnError is the error of a receive whose matched sender cancelled
// its send: errors.Is(err, ErrCanceled) holds, and errors.As tells it from
// the receiver's own Cancel.
type WithdrawnError = core.WithdrawnError

// PeerLostError names the world rank that was lost: errors.Is(err,
// ErrPeerLost) holds.
type PeerLostError = core.PeerLostError
