package sched

import (
	"strconv"

	"github.com/commtune/commtune/internal/driver"
)

// RailState is a strategy's view of one rail to the destination.
type RailState struct {
	Caps driver.Caps
	Busy bool // a frame is in flight; the rail takes nothing until it is done
	// Model predicts the rail's transfer times (Scheduler.SetModel); nil:
	// no prediction.
	Model *RailModel
	// BusyFor is, for a busy rail with a Model, the predicted time in ns
	// until its frame is done (never negative: 0 once overdue); 0 for an
	// idle rail or when unknown.
	BusyFor float64
	// Searched is set while the scheduler searches this loaded rail's
	// share of the Bulk packets split over idle rails (lean.go). Share,
	// when not 0, is that share, instead of what the strategy's own solve
	// gives it; the other rails give or take the difference. Split
	// honours both: it applies Share and records its own solve's share
	// in the packet for the search.
	Searched bool
	Share    float64
}

// Assignment is one frame to put on one rail: either several Eager packets
// aggregated into one Packet frame, or one chunk [Off, Off+Len) of a Bulk
// packet's payload (Body, or Vec's concatenation) as a Put frame.
type Assignment struct {
	Rail    int       // index into the rails passed to Schedule
	Packets []*Packet // Eager: one or more, in order; Bulk: exactly one
	Off     int       // Bulk: chunk offset inside the payload
	Len     int       // Bulk: chunk length
	// Offload posts the frame with driver.Frame.Offload: a background
	// writer sends it while the caller posts the plan's next frames.
	Offload bool
}

// Plan collects a strategy's decisions; it is reused between calls so that
// scheduling allocates nothing in the steady state.
type Plan struct {
	As []Assignment
}

// share returns the fraction of the Bulk packet p that the plan gives
// rail.
func (pl *Plan) share(p *Packet, rail int) float64 {
	n := 0
	for i := range pl.As {
		if a := &pl.As[i]; a.Rail == rail && a.Packets[0] == p {
			n += a.Len
		}
	}
	return float64(n) / float64(p.bodyLen())
}

// Reset empties the plan, keeping its storage.
func (pl *Plan) Reset() {
	for i := range pl.As {
		pl.As[i].Packets = pl.As[i].Packets[:0]
	}
	pl.As = pl.As[:0]
}

// AddEager plans the Eager packets ps as one frame on rail.
func (pl *Plan) AddEager(rail int, ps ...*Packet) {
	a := pl.next()
	a.Rail = rail
	a.Packets = append(a.Packets, ps...)
}

// Join adds the Eager packet p to the frame planned last.
func (pl *Plan) Join(p *Packet) {
	a := &pl.As[len(pl.As)-1]
	a.Packets = append(a.Packets, p)
}

// AddBulk plans the chunk [off, off+n) of the Bulk packet p on rail.
func (pl *Plan) AddBulk(rail int, p *Packet, off, n int) {
	a := pl.next()
	a.Rail = rail
	a.Packets = append(a.Packets, p)
	a.Off, a.Len = off, n
	p.planned = off + n
}

func (pl *Plan) next() *Assignment {
	if len(pl.As) < cap(pl.As) {
		pl.As = pl.As[:len(pl.As)+1]
	} else {
		pl.As = append(pl.As, Assignment{})
	}
	a := &pl.As[len(pl.As)-1]
	a.Packets, a.Off, a.Len, a.Offload = a.Packets[:0], 0, 0, false
	return a
}

// Strategy decides what the idle rails to one destination send next. It is
// invoked only when at least one rail is idle and the queue is not empty. It
// removes from q the packets it plans entirely; a Bulk packet it plans only
// in part stays at the head (Packet.Remaining tells how much is left). It
// runs on the critical path: it must decide in well under a microsecond,
// from precomputed numbers, and must not block or allocate.
type Strategy interface {
	Name() string
	Schedule(q *Queue, rails []RailState, plan *Plan)
}

// Default is the default strategy: one packet per idle rail, whole, in
// submission order.
type Default struct{}

// Name returns "default".
func (Default) Name() string { return "default" }

// Schedule gives each idle rail the oldest pending packet.
func (Default) Schedule(q *Queue, rails []RailState, plan *Plan) {
	for i := range rails {
		if rails[i].Busy {
			continue
		}
		p := q.Peek()
		if p == nil {
			return
		}
		if p.Kind == Bulk {
			plan.AddBulk(i, p, p.planned, p.Remaining())
		} else {
			plan.AddEager(i, p)
		}
		q.Pop()
	}
}

// Aggregate is the aggregation strategy (seed 000 §II-D, NewMadeleine's
// "aggreg"): an idle rail takes the oldest packet and, behind it, every
// following Eager packet while the frame stays within Max bytes (and the
// rail's MaxPacket): one frame, one set of per-frame costs, for several
// messages. Bulk packets go whole, alone, as with Default.
type Aggregate struct {
	Max int // bytes per aggregated frame
}

// maxAggregated bounds the packets of one frame (two iovec entries each,
// well under the kernel's writev limit, unless a packet's payload is a
// Vec of many parts: rails write a frame's iovec in pieces the kernel
// takes).
const maxAggregated = 64

// Name returns "aggregate".
func (Aggregate) Name() string { return "aggregate" }

// Schedule packs Eager packets into one frame per idle rail.
func (a Aggregate) Schedule(q *Queue, rails []RailState, plan *Plan) {
	for i := range rails {
		if rails[i].Busy {
			continue
		}
		p := q.Peek()
		if p == nil {
			return
		}
		if p.Kind == Bulk {
			q.Pop()
			plan.AddBulk(i, p, p.planned, p.Remaining())
			continue
		}
		n, _ := aggregateRun(q, eagerLimit(a.Max, rails[i].Caps))
		packEager(q, plan, i, n)
	}
}

// eagerLimit returns the size bound of an aggregated frame on a rail with
// caps: limit, or the rail's MaxPacket if smaller.
func eagerLimit(limit int, caps driver.Caps) int {
	if mp := caps.MaxPacket; mp > 0 && mp < limit {
		return mp
	}
	return limit
}

// aggregateRun returns how many packets from the head of q (an Eager
// packet) go into one aggregated frame of at most limit bytes — the head
// and every following Eager packet that fits, up to maxAggregated — and
// the frame's size. It removes nothing.
func aggregateRun(q *Queue, limit int) (n, size int) {
	p := q.Peek()
	n, size = 1, p.Len()
	for next := q.PeekNext(p); next != nil && next.Kind == Eager && n < maxAggregated && size+next.Len() <= limit; next = q.PeekNext(next) {
		size += next.Len()
		n++
	}
	return n, size
}

// packEager pops the n packets at the head of q and plans them as one
// frame on rail.
func packEager(q *Queue, plan *Plan, rail, n int) {
	plan.AddEager(rail, q.Pop())
	for ; n > 1; n-- {
		plan.Join(q.Pop())
	}
}

// Single puts everything on the rail with index Rail (rail 0 if there is
// no such rail): one packet per frame, Bulk packets whole, waiting while
// that rail is busy. It samples and benchmarks one rail alone.
type Single struct {
	Rail int
}

// Name returns "single/" and the rail index.
func (s Single) Name() string { return "single/" + strconv.Itoa(s.Rail) }

// Schedule gives the oldest packet to the rail if it is idle.
func (s Single) Schedule(q *Queue, rails []RailState, plan *Plan) {
	i := s.Rail
	if i < 0 || i >= len(rails) {
		i = 0
	}
	if len(rails) == 0 || rails[i].Busy {
		return
	}
	p := q.Pop()
	if p == nil {
		return
	}
	if p.Kind == Bulk {
		plan.AddBulk(i, p, p.planned, p.Remaining())
	} else {
		plan.AddEager(i, p)
	}
}
