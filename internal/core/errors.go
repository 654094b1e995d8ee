package core

import (
	"errors"
	"fmt"
)

var (
	// ErrTruncate reports a message longer than the receive buffer; the
	// buffer holds the message's first bytes.
	ErrTruncate = errors.New("message truncated")
	// ErrPeerLost reports that a rank the operation needs is gone.
	ErrPeerLost = errors.New("peer lost")
	// ErrClosed reports an operation on a finalized endpoint.
	ErrClosed = errors.New("communicator closed")
	// ErrCanceled reports a request cancelled before it matched, or a
	// receive whose matched sender cancelled its send (a *WithdrawnError).
	ErrCanceled = errors.New("request canceled")
	// ErrSizeMismatch reports ranks that disagree on the size of what they
	// exchange in a collective call or a halo exchange.
	ErrSizeMismatch = errors.New("ranks disagree on the message size")
	// ErrRevoked reports an operation on a communicator that one of its
	// ranks revoked (Engine.RevokeContexts).
	ErrRevoked = errors.New("communicator revoked")
)

// WithdrawnError is the error of a receive whose matched sender withdrew
// its send: the cancellation was the sender's, not the receiver's, so a
// caller can tell it from its own Cancel. errors.Is(err, ErrCanceled)
// holds, as MPI's cancel of a matched send would have it.
type WithdrawnError struct {
	Rank int // the world rank that withdrew its send
}

func (e *WithdrawnError) Error() string {
	return fmt.Sprintf("request canceled: rank %d withdrew its send", e.Rank)
}

// Is makes errors.Is(err, ErrCanceled) true.
func (e *WithdrawnError) Is(target error) bool { return target == ErrCanceled }

// TruncateError is the error of a receive whose message did not fit.
type TruncateError struct {
	MessageLen int // bytes the sender sent
	BufferLen  int // bytes the receive buffer holds (and received)
}

func (e *TruncateError) Error() string {
	return fmt.Sprintf("message truncated: %d bytes sent, receive buffer holds %d", e.MessageLen, e.BufferLen)
}

// Is makes errors.Is(err, ErrTruncate) true.
func (e *TruncateError) Is(target error) bool { return target == ErrTruncate }

// PeerLostError names the world rank that was lost and why.
type PeerLostError struct {
	Rank int
	Err  error
}

func (e *PeerLostError) Error() string {
	return fmt.Sprintf("rank %d lost: %v", e.Rank, e.Err)
}

// Is makes errors.Is(err, ErrPeerLost) true.
func (e *PeerLostError) Is(target error) bool { return target == ErrPeerLost }

// Unwrap returns the cause reported by the driver.
func (e *PeerLostError) Unwrap() error { return e.Err }
