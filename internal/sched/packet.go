// Package sched is commtune's NIC-driven packet scheduler (seed 002 §III,
// NewMadeleine's middle layer): the core submits packets to per-destination
// queues and returns at once; whenever a rail to that destination can take
// more work, the destination's Strategy decides what goes on which rail — one
// packet, an aggregate of several, or chunks of one split across rails.
package sched

import "github.com/commtune/commtune/internal/driver"

// Kind says how a strategy may treat a packet.
type Kind uint8

const (
	// Eager packets are self-describing entries for the peer's core (message
	// header and payload, or a control entry): several may be aggregated into
	// one frame, none is ever split.
	Eager Kind = 1
	// Bulk packets are rendezvous data bound for a region the peer
	// registered: one may be split into chunks over several rails, never
	// aggregated with others.
	Bulk Kind = 2
)

// Completer is told when a packet has left: its buffers may be reused. err is
// non-nil when it could not be sent (the peer is lost).
type Completer interface {
	Sent(p *Packet, err error)
}

// Packet is one unit submitted to a destination queue. The submitter keeps
// ownership of the memory it points to until Owner.Sent is called.
type Packet struct {
	Kind   Kind
	Head   []byte        // Eager: the entry header (it may already hold a copied payload)
	Body   []byte        // payload sent by reference (iovec): Eager payload or Bulk data
	Method driver.Method // Bulk: how a rail moves it (driver.Frame.Method)
	Region uint64        // Bulk: the peer's region handle
	Offset int64         // Bulk: offset of the payload's first byte inside the region
	Owner  Completer

	// Vec, when not nil, is the payload instead of Body: the concatenation
	// of its parts, sent by reference part by part with no gathering copy
	// (a message made of several memory regions). A Bulk chunk of it is
	// the sub-list of parts that covers the chunk, sliced, not copied.
	Vec [][]byte

	next     *Packet // intrusive FIFO link: queuing allocates nothing
	vecLen   int     // Vec's total length, taken at Submit (0: not taken)
	planned  int     // Bulk: payload bytes already assigned to rails
	finished int     // Bulk: payload bytes whose frames are done
	failed   error   // Bulk: first error seen among its chunks
	// solved is, for a Bulk packet split whole over idle rails (which the
	// share search scores), the share the strategy's own solve gave the
	// searched rail; 0 otherwise.
	solved float64
}

// Len returns the packet's size on the wire, headers included.
func (p *Packet) Len() int { return len(p.Head) + p.bodyLen() }

// Remaining returns the Bulk bytes not yet assigned to a rail.
func (p *Packet) Remaining() int { return p.bodyLen() - p.planned }

// bodyLen returns the payload's length: Body's, or the sum of Vec's parts
// (counted once at Submit; a packet not submitted yet counts them here).
func (p *Packet) bodyLen() int {
	if p.Vec == nil {
		return len(p.Body)
	}
	if p.vecLen > 0 {
		return p.vecLen
	}
	return vecLen(p.Vec)
}

func vecLen(vec [][]byte) int {
	n := 0
	for _, b := range vec {
		n += len(b)
	}
	return n
}

// Queue is the FIFO of packets pending for one destination, in submission
// order. Strategies pop from it; they never see tags or matching.
type Queue struct {
	head, tail *Packet
	n          int
	bytes      int
}

// Len returns the number of packets queued.
func (q *Queue) Len() int { return q.n }

// Bytes returns the wire size of the packets queued.
func (q *Queue) Bytes() int { return q.bytes }

// Peek returns the oldest packet without removing it, or nil.
func (q *Queue) Peek() *Packet { return q.head }

// PeekNext returns the packet queued after p, or nil; strategies use it to
// look ahead for aggregation.
func (q *Queue) PeekNext(p *Packet) *Packet { return p.next }

// Push appends p.
func (q *Queue) Push(p *Packet) {
	p.next = nil
	if q.tail == nil {
		q.head = p
	} else {
		q.tail.next = p
	}
	q.tail = p
	q.n++
	q.bytes += p.Len()
}

// Pop removes and returns the oldest packet, or nil.
func (q *Queue) Pop() *Packet {
	p := q.head
	if p == nil {
		return nil
	}
	q.head = p.next
	if q.head == nil {
		q.tail = nil
	}
	p.next = nil
	q.n--
	q.bytes -= p.Len()
	return p
}
