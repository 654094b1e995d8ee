package observe

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Counters are one communicator's: per operation and per peer. Methods are
// safe for concurrent use; they cost a few atomic additions per call.
type Counters struct {
	ops   [maxOps]opCounts
	size  int // members, for the per-peer table
	peers atomic.Pointer[peerCounts]
	mu    sync.Mutex // makes peers, adds paths
}

type opCounts struct {
	calls, bytes, nanos atomic.Int64
	paths               atomic.Pointer[[]*pathCount] // copied on write, under Counters.mu
}

type pathCount struct {
	alg, by string
	calls   atomic.Int64
}

// peerCounts is the point-to-point traffic with each member.
type peerCounts struct {
	sends, sent, recvs, received []atomic.Int64
}

// NewCounters returns the counters of a communicator of size members.
func NewCounters(size int) *Counters { return &Counters{size: size} }

// add counts a call of op that moved bytes in d, along the path alg chosen
// by by ("" for none).
func (cs *Counters) add(op Op, bytes int64, d int64, alg, by string) {
	o := &cs.ops[op]
	o.calls.Add(1)
	if bytes > 0 {
		o.bytes.Add(bytes)
	}
	o.nanos.Add(d)
	if alg == "" {
		return
	}
	if p := o.paths.Load(); p != nil {
		for _, pc := range *p {
			// The names come from tables made once: equal strings share
			// their bytes, and the comparison stops at the pointer.
			if pc.alg == alg && pc.by == by {
				pc.calls.Add(1)
				return
			}
		}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var list []*pathCount
	if p := o.paths.Load(); p != nil {
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
	o.paths.Store(&list)
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
	Time  time.Duration
	Paths []PathStats // by calls, most first
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
func (cs *Counters) Ops() []OpStats {
	var out []OpStats
	for op := Op(0); op < Op(len(cs.ops)); op++ {
		o := &cs.ops[op]
		n := o.calls.Load()
		if n == 0 {
			continue
		}
		s := OpStats{Op: op.Name(), Calls: n, Bytes: o.bytes.Load(), Time: time.Duration(o.nanos.Load())}
		if p := o.paths.Load(); p != nil {
			for _, pc := range *p {
				s.Paths = append(s.Paths, PathStats{Algorithm: pc.alg, By: pc.by, Calls: pc.calls.Load()})
			}
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
