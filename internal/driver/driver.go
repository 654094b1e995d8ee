// Package driver defines the contract between commtune's scheduler and its
// rails: a rail is one connection to one peer over one transport (inproc,
// shm, tcp). A driver knows nothing of tags or matching; it moves two kinds of
// frames and reports what it received, when it can take more work, and when a
// peer is gone.
package driver

import (
	"errors"
	"fmt"
)

// FrameKind says what a frame carries.
type FrameKind uint8

const (
	// Packet frames carry an opaque body for the peer's core (message
	// headers, eager payloads, control entries, possibly several aggregated).
	Packet FrameKind = 1
	// Put frames carry bytes that land at an offset of a region the peer
	// registered (rendezvous data); the driver asks the peer's Handler where
	// before it reads the payload, so the bytes go straight to their
	// destination.
	Put FrameKind = 2
)

// Frame is one unit of work handed to a rail.
type Frame struct {
	Kind   FrameKind
	Method Method   // Put: how to move the data, MethodDefault or one of Caps.Methods
	Region uint64   // Put: the peer's region handle
	Offset int64    // Put: byte offset of Iov's data inside the region
	Iov    [][]byte // the bytes, gathered in order
	// Offload asks the rail to hand the whole frame to a background
	// writer rather than write any of it in the caller's goroutine, so
	// that another core copies it into the kernel while the caller posts
	// the next chunk of a split (multicore posting, seed 002 §III-B/D).
	// Rails without a background writer ignore it.
	Offload bool
}

// Len returns the number of payload bytes in f.
func (f *Frame) Len() int {
	n := 0
	for _, b := range f.Iov {
		n += len(b)
	}
	return n
}

// Caps describes what a rail can do. The scheduler's strategies and the
// core's protocol choice read it; nothing else about a driver is visible
// above this package.
type Caps struct {
	Transport string // "self", "inproc", "shm", "tcp"
	Rail      int    // index among the rails that reach the same peer
	// Name is what identifies the rail across runs, for its sampled curve
	// in a profile: the interface and address family ("eth1/ipv4"), never
	// a port. Empty for rails that are one of a kind (shm, inproc).
	Name       string
	Local      bool // the peer runs on the same node
	MaxPacket  int  // largest Packet body the rail accepts, in bytes
	Iovec      bool // gathers an iovec natively (writev); else flattens by copy
	SingleCopy bool // the peer can read our memory directly (in-process, CMA): a receiver-pull rendezvous works
	// Methods lists the ways this rail can move Put data besides
	// MethodDefault, in any order (shm: MethodCopy, MethodCacheFree,
	// MethodVmsplice); Frame.Method picks one. Empty: the default only.
	Methods []Method
}

// Rail is one connection to one peer.
type Rail interface {
	// Caps returns the rail's capabilities; they do not change.
	Caps() Caps
	// Peer returns the world rank at the other end.
	Peer() int
	// Post starts sending f and never waits for the peer to make progress.
	// It returns true when f was handed off entirely before returning; the
	// caller may then reuse f's buffers at once. It returns false when the
	// rest continues in the background: the rail then reports Handler.Idle
	// exactly once, after which f's buffers are free again. The scheduler
	// never posts to a rail before its previous frame is done. An error means
	// the frame was not sent and the rail is unusable (the peer is lost).
	Post(f *Frame) (done bool, err error)
}

// Poller is implemented by rails that can receive in the caller's
// goroutine. Poll delivers to the Handler whatever has already arrived,
// without waiting, and reports whether any byte arrived (data may be
// flowing inside one large frame). A goroutine
// waiting for a message polls for a while before parking, so that the
// message's arrival wakes no other thread: on a virtual machine a thread
// wake-up costs 3–30 µs, more than a small-message round trip.
//
// StartPolling and StopPolling bracket a waiter's polling: meanwhile the
// rail leaves its input to the pollers, so that the goroutine that needs a
// message receives it on its own processor. StopPolling(true) says the
// wait ended with what it waited for: the process is likely to wait again
// within microseconds, so the rail may let input wait for it a little (a
// bounded time) rather than wake a thread for it. StopPolling(false) says
// the waiter is about to park: input must wake it. Attend says the same
// as StopPolling(true) for a wait that found its request already complete
// and so never polled.
type Poller interface {
	Poll() bool
	StartPolling()
	StopPolling(attentive bool)
	Attend()
}

// SelfPolled is implemented by Pollers whose input a waiter's Poll
// delivers whole, with no goroutine of the process's help (shared-memory
// rings): a waiter on such rails alone may poll long between yields to
// the process's goroutines. A rail that needs its own goroutines to read
// or write (tcp) leaves waiters yielding often.
type SelfPolled interface {
	SelfPolled() bool
}

// PollGroup is implemented by Pollers whose Poll delivers the input of
// every rail of their group, not only their own (a node's shared-memory
// rails all take in the one inbound segment). A waiter polling every
// peer polls one rail of a group: with 255 local peers, polling each
// rail repeated the same drain 255 times a poll.
type PollGroup interface {
	PollGroup() any
}

// Flusher is implemented by rails whose Post may leave the rest of a frame
// to a background writer. Flush writes that rest in the calling goroutine,
// blocking until it is out, if the background writer has not started on it,
// and reports whether it did (Handler.Idle has then been called). A
// goroutine that must wait for the frame anyway calls it instead of
// parking.
type Flusher interface {
	Flush() bool
}

// Immediate is implemented by rails that can take one small Packet frame in
// the calling goroutine, whole, when nothing else is in flight on them:
// SendNow writes the frame whose body is head followed by body and reports
// whether it did, false when it cannot at once (no room, the rail failed).
// A frame it took is done: no Idle follows. It is the scheduler's fast
// path for a small message to an idle peer, with no frame, queue or
// strategy.
type Immediate interface {
	SendNow(head, body []byte) bool
}

// Backlogger is implemented by rails whose Post can report a frame done
// while its bytes still wait in the kernel (a TCP send buffer): Backlog
// returns how many bytes written to the peer have not arrived yet. A
// multirail split adds it to the rail's predicted release and leaves it
// out of the time a chunk is observed to take.
type Backlogger interface {
	Backlog() int
}

// Puller is implemented by rails whose receiving side can copy a message
// straight out of the sender's memory (Linux CMA for shm): the sender
// exposes its buffer's address in the rendezvous request, the receiver
// pulls it into the receive buffer — one copy, no intermediate buffer.
type Puller interface {
	// Pull copies len(dst) bytes at addr in the peer's memory into dst.
	Pull(dst []byte, addr uint64) error
}

// VecPuller is implemented by Pullers that can scatter one pull into
// several pieces of local memory at once (process_vm_readv with a local
// iovec list): a receive made of segments is pulled in one call.
type VecPuller interface {
	// PullV copies the bytes at addr in the peer's memory into the parts
	// of dst in order, as many as their lengths add up to.
	PullV(dst [][]byte, addr uint64) error
}

// Span is a range of a peer's memory: Len bytes at Addr.
type Span struct {
	Addr uint64
	Len  int
}

// SpanReader is implemented by Pullers that read several ranges of the
// peer's memory into several local ones at once (process_vm_readv with
// both lists): a one-sided get of a strided region, in one copy.
type SpanReader interface {
	// ReadSpans copies the concatenation of src, in the peer's memory,
	// into the concatenation of dst; both have the same total length.
	ReadSpans(dst [][]byte, src []Span) error
}

// SpanWriter is implemented by Pullers that also write ranges of the
// peer's memory (process_vm_writev): a one-sided put, in one copy.
type SpanWriter interface {
	// WriteSpans copies the concatenation of src into the concatenation of
	// dst, ranges of the peer's memory; both have the same total length.
	WriteSpans(dst []Span, src [][]byte) error
}

// Handler receives what rails produce. The core implements it; rails call it
// from their own goroutines and never while holding a lock the core might
// need.
type Handler interface {
	// Packet delivers a received Packet body, valid only during the call. An
	// error means the peer broke the protocol: the rail drops the connection
	// and reports the peer lost.
	Packet(peer int, body []byte) error
	// Region returns the memory where the first bytes of the n bytes of a
	// Put at offset land: a region may be several separate pieces of
	// memory (a receive scattered over segments), so it may return fewer
	// than n bytes, the part up to the end of the piece that holds offset,
	// but never none when n > 0 and never more than n. The rail places
	// what it got and calls Region again at the advanced offset for the
	// rest, until all n bytes are placed. It fails for an unknown handle
	// or a range outside the region; the rail then treats it, and an empty
	// answer for n > 0, as a protocol violation.
	Region(peer int, region uint64, offset int64, n int) ([]byte, error)
	// PutDone reports that the n bytes of a Put at offset landed: once per
	// Put, after every piece Region handed out for it is filled.
	PutDone(peer int, region uint64, offset int64, n int)
	// Idle reports that a rail finished the frame it had in the background
	// (the NIC-idle event of NewMadeleine's scheduler); err is non-nil if the
	// frame could not be sent entirely.
	Idle(r Rail, err error)
	// PeerLost reports that a peer can no longer be reached; err wraps
	// ErrPeerClosed when the peer shut down in an orderly way.
	PeerLost(peer int, err error)
}

// Transport is a set of rails of one kind.
type Transport interface {
	// Name returns the transport's name ("inproc", "tcp", ...).
	Name() string
	// Rails returns the rails that reach peer, or nil if this transport does
	// not reach it.
	Rails(peer int) []Rail
	// Close shuts the transport down in an orderly way: peers see
	// ErrPeerClosed, not a failure.
	Close() error
}

// ErrPeerClosed marks a peer that shut down in an orderly way (finalized):
// operations that need it fail, but it is not a crash.
var ErrPeerClosed = errors.New("peer closed")

// ErrPeerGone marks a peer found gone by a rail's own means (its process
// no longer exists when its memory is read) before the rail's link to it
// reported the loss.
var ErrPeerGone = errors.New("peer process gone")

// ErrProtocol marks input from a peer that breaks the wire protocol.
var ErrProtocol = errors.New("protocol violation")

// ProtocolError returns an error wrapping ErrProtocol with context.
func ProtocolError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}
