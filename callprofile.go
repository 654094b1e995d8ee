package commtune

import "time"

// Profile is what a communicator's counters hold: per operation the calls
// made on it by this rank, the bytes they carried, the time they spent
// inside the library and the paths they took; per peer the point-to-point
// traffic. The counters are on unless COMMTUNE_COUNTERS=off (measured
// cost: docs/trace.md). Engine-wide counters (unexpected messages,
// rendezvous, copies) are in Stats.
type Profile struct {
	// Ops lists the operations called on the communicator at least once,
	// the most time first.
	Ops []OpProfile
	// Peers lists the ranks of the communicator this rank sent
	// point-to-point messages to or received them from, in rank order.
	Peers []PeerProfile
}

// OpProfile is one operation's line of a Profile.
type OpProfile struct {
	Op    string // the call as the API names it: "Send", "Allreduce", "Iallreduce", "HaloExchange" …
	Calls int64  // calls made, failed ones included
	Bytes int64  // this rank's payload: sent for a send, received at a receive's Wait, the vector of a collective
	// Time is the time from entering the library to returning, summed:
	// measured on the first call and one in 32 after (every call when the
	// rank writes a timeline) and scaled to all of them, since two clock
	// reads on every call would cost a small collective several percent.
	Time time.Duration
	// Paths are the algorithms or implementations the calls took, with
	// who chose them (ChosenBy*, "learned" or "fixed" for a Halo), most
	// calls first; none for point-to-point.
	Paths []PathProfile
}

// PathProfile counts the calls of an operation that took one path.
type PathProfile struct {
	Algorithm string
	By        string
	Calls     int64
}

// PeerProfile is the point-to-point traffic with one rank of the
// communicator.
type PeerProfile struct {
	Rank          int
	Sends         int64 // sends to it (Send, Isend, Ssend, Sendrecv …)
	SentBytes     int64
	Receives      int64 // receives from it that completed (Recv, and Wait of an Irecv)
	ReceivedBytes int64
}

// Profile returns c's counters for this rank (empty for a nil
// communicator, or with COMMTUNE_COUNTERS=off).
func (c *Comm) Profile() Profile {
	if c == nil || !c.in.Recorder().Counting() {
		return Profile{}
	}
	cs := c.in.Counters()
	var p Profile
	for _, o := range cs.Ops() {
		op := OpProfile{Op: o.Op, Calls: o.Calls, Bytes: o.Bytes, Time: o.Time}
		for _, pa := range o.Paths {
			op.Paths = append(op.Paths, PathProfile{Algorithm: pa.Algorithm, By: pa.By, Calls: pa.Calls})
		}
		p.Ops = append(p.Ops, op)
	}
	for _, pe := range cs.Peers() {
		p.Peers = append(p.Peers, PeerProfile{Rank: pe.Peer, Sends: pe.Sends, SentBytes: pe.SentBytes,
			Receives: pe.Receives, ReceivedBytes: pe.ReceivedBytes})
	}
	return p
}
