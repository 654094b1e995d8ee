package observe

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Counters are one communicator's: per operation and per peer. Methods are
// safe for concurrent use.
//
// They cost a call one atomic addition in the common case, against a
// small collective's few hundred nanoseconds: a call of the size and path
// of the operation's first call adds only to its count (the bytes and the
// path's calls follow from it), and the time inside the library is
// measured on one call in timeEvery (and every traced call) and scaled.
type Counters struct {
	ops   [maxOps]opCounts
	size  int // members, for the per-peer table
	peers atomic.Pointer[peerCounts]
	mu    sync.Mutex // makes peers, adds paths
}

type opCounts struct {
	calls atomic.Int64
	// size0 is the first call's bytes (sizeUnset before it); extra sums
	// (bytes − size0) over the calls of other sizes.
	size0, extra atomic.Int64
	// timed calls and their nanoseconds: the sample Time scales.
	timed, nanos atomic.Int64
	// first is the first path taken; others the rest, counted (copied on
	// write under Counters.mu); unpathed counts the calls of an operation
	// with paths that named none (a call that failed before choosing).
	first    atomic.Pointer[pathCount]
	others   atomic.Pointer[[]*pathCount]
	unpathed atomic.Int64
}

type pathCount struct {
	alg, by string
	calls   atomic.Int64
}

// sizeUnset marks opCounts.size0 before the first call.
const sizeUnset = math.MinInt64

// timeEvery is how many calls an operation's time is measured on one of,
// when not tracing: two clock reads on every call would cost a small
// collective several percent, one call in 16 still a half.
const (
	timeBits  = 5
	timeEvery = 1 << timeBits
)

// timeSample reports whether the n-th call (from 1) of an operation is
// timed: the first, then one in timeEvery chosen by a multiplicative hash
// of n, so that no regular pattern of calls (sizes taking turns …) meets
// the sample in step.
func timeSample(n int64) bool {
	return n == 1 || (uint64(n)*0x9E3779B97F4A7C15)>>(64-timeBits) == 0
}

// peerCounts is the point-to-point traffic with each member.
type peerCounts struct {
	sends, sent, recvs, received []atomic.Int64
}

// NewCounters returns the counters of a communicator of size members.
func NewCounters(size int) *Counters {
	cs := &Counters{size: size}
	for i := range cs.ops {
		cs.ops[i].size0.Store(sizeUnset)
	}
	return cs
}

// begin counts a call of op and reports whether to time it.
func (cs *Counters) begin(op Op) bool { return timeSample(cs.ops[op].calls.Add(1)) }

// end adds what a finished call of op carried: bytes (<0: none), the path
// alg chosen by by ("" for none), and d, its time, if it was timed.
func (cs *Counters) end(op Op, bytes int64, timed bool, d int64, alg, by string) {
	o := &cs.ops[op]
	bytes = max(bytes, 0) // a call with no payload of its own counts 0
	s0 := o.size0.Load()
	if s0 == sizeUnset {
		if o.size0.CompareAndSwap(sizeUnset, bytes) {
			s0 = bytes
		} else {
			s0 = o.size0.Load()
		}
	}
	if s0 != bytes {
		o.extra.Add(bytes - s0)
	}
	if timed {
		o.timed.Add(1)
		o.nanos.Add(d)
	}
	if !opPaths[op] {
		return
	}
	if alg == "" {
		o.unpathed.Add(1)
		return
	}
	if f := o.first.Load(); f != nil && same(f.alg, alg) && same(f.by, by) {
		return
	}
	cs.addPath(o, alg, by)
}

// same reports whether a and b are equal, first by their bytes' address:
// path names come from tables made once, so equal names share their bytes,
// and the common case costs no call.
func same(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// addPath counts a call that took a path other than the first.
func (cs *Counters) addPath(o *opCounts, alg, by string) {
	if p := o.others.Load(); p != nil {
		for _, pc := range *p {
			if pc.alg == alg && pc.by == by {
				pc.calls.Add(1)
				return
			}
		}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if o.first.Load() == nil {
		o.first.Store(&pathCount{alg: alg, by: by})
		return
	}
	if f := o.first.Load(); f.alg == alg && f.by == by {
		return
	}
	var list []*pathCount
	if p := o.others.Load(); p != nil {
		list = *p
		for _, pc := range list {
			if pc.alg == alg && pc.by == by {
				pc.calls.Add(1)
				return
			}
		}
	}
	pc := &pathCount{alg: alg, by: by}
	pc.calls.Store(1)
	list = append(slices.Clip(list), pc)
	o.others.Store(&list)
}

// addPeer counts a message sent to (send) or received from peer, a rank of
// the communicator.
func (cs *Counters) addPeer(peer int, send bool, bytes int64) {
	if peer < 0 || peer >= cs.size {
		return
	}
	p := cs.peers.Load()
	if p == nil {
		cs.mu.Lock()
		if p = cs.peers.Load(); p == nil {
			p = &peerCounts{
				sends: make([]atomic.Int64, cs.size), sent: make([]atomic.Int64, cs.size),
				recvs: make([]atomic.Int64, cs.size), received: make([]atomic.Int64, cs.size),
			}
			cs.peers.Store(p)
		}
		cs.mu.Unlock()
	}
	bytes = max(bytes, 0)
	if send {
		p.sends[peer].Add(1)
		p.sent[peer].Add(bytes)
	} else {
		p.recvs[peer].Add(1)
		p.received[peer].Add(bytes)
	}
}

// OpStats is what the counters hold for one operation.
type OpStats struct {
	Op    string
	Calls int64
	Bytes int64
	// Time is the time inside the library, estimated from TimedCalls
	// calls measured (all of them when the rank traces).
	Time       time.Duration
	TimedCalls int64
	Paths      []PathStats // by calls, most first
}

// PathStats counts the calls that took one path.
type PathStats struct {
	Algorithm, By string
	Calls         int64
}

// PeerStats is the point-to-point traffic with one peer.
type PeerStats struct {
	Peer                    int
	Sends, SentBytes        int64
	Receives, ReceivedBytes int64
}

// Ops returns the operations called at least once, the most time first.
// Calls still running count in Calls, and in Bytes and Paths once ended.
func (cs *Counters) Ops() []OpStats {
	var out []OpStats
	for op := Op(0); op < Op(len(cs.ops)); op++ {
		o := &cs.ops[op]
		n := o.calls.Load()
		if n == 0 {
			continue
		}
		s := OpStats{Op: op.Name(), Calls: n, TimedCalls: o.timed.Load()}
		if s0 := o.size0.Load(); s0 != sizeUnset {
			s.Bytes = max(n*s0+o.extra.Load(), 0) // calls running count as the first size
		}
		if s.TimedCalls > 0 {
			s.Time = time.Duration(float64(o.nanos.Load()) * float64(n) / float64(s.TimedCalls))
		}
		if f := o.first.Load(); f != nil {
			s.Paths = []PathStats{{Algorithm: f.alg, By: f.by, Calls: n - o.unpathed.Load()}}
			if p := o.others.Load(); p != nil {
				for _, pc := range *p {
					c := pc.calls.Load()
					s.Paths[0].Calls -= c
					s.Paths = append(s.Paths, PathStats{Algorithm: pc.alg, By: pc.by, Calls: c})
				}
			}
			s.Paths[0].Calls = max(s.Paths[0].Calls, 0) // a call still running counts on the first path
			slices.SortStableFunc(s.Paths, func(a, b PathStats) int { return int(b.Calls - a.Calls) })
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b OpStats) int { return int(b.Time - a.Time) })
	return out
}

// Peers returns the peers this rank exchanged point-to-point messages
// with, in rank order.
func (cs *Counters) Peers() []PeerStats {
	p := cs.peers.Load()
	if p == nil {
		return nil
	}
	var out []PeerStats
	for r := range cs.size {
		s := PeerStats{Peer: r, Sends: p.sends[r].Load(), SentBytes: p.sent[r].Load(),
			Receives: p.recvs[r].Load(), ReceivedBytes: p.received[r].Load()}
		if s.Sends != 0 || s.Receives != 0 {
			out = append(out, s)
		}
	}
	return out
}
