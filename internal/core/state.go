package core

// A request's progress through its protocol is one reqState, moved only
// by events (reqEvent) through the table reqMoves, under e.mu: what
// Cancel, a withdraw, a peer's loss or a completion may do to a request is
// read in one row of the table, not worked out from flags. The table is
// checked pair by pair against testdata/request_states.txt
// (TestRequestStates).
//
// A send travels eagerly (eager), or announces itself and waits: with an
// RTS for the receiver's CTS (rts), or with an RTS-pull for the receiver's
// read and FIN (pull-rts), which a withdraw may still take back
// (withdrawing); once the CTS asks for data, the data is with the rails
// (bulk) and nothing takes it back. A receive is posted, then matches a
// message: an eager one ends it at once, an RTS registers its buffer as a
// region that awaits the data (matched), which it may read from the
// sender's memory itself (pulling). A put is posted, matches its target's
// post and sends its data as a send's bulk. An exposure is a region no
// byte has reached (exposed), then one being filled (landing); cancelled
// before any byte landed, it completes but stays registered so that a put
// already on its way lands in scratch memory (scrap).
//
// docs/wire-core.md describes the entries that drive these events.

// reqState is where a request is in its protocol.
type reqState uint8

const (
	// stNew: not yet handed to the engine. It is the zero value (a
	// recycled request is new again) and no event leads back to it, so in
	// the table it also means "refused".
	stNew reqState = iota
	// stPosted: a receive or put in its context's posted list, unmatched.
	stPosted
	// stEager: an eager send (by reference, or inline) whose packet has
	// not left.
	stEager
	// stRTS: a rendezvous send whose RTS went out, waiting for the CTS;
	// in e.sends.
	stRTS
	// stPullRTS: a rendezvous send whose RTS-pull went out, waiting for
	// the receiver's read (its FIN), or a CTS if the read fails; in e.sends.
	stPullRTS
	// stWithdrawing: a pulled send whose withdraw went out, waiting for
	// the answer (withdrawn, or the FIN or CTS of a read that had begun);
	// in e.sends.
	stWithdrawing
	// stBulk: a send or put whose data is with the rails: no cancelling.
	stBulk
	// stMatched: a receive that matched an RTS or RTS-pull; its region is
	// registered (e.regions), its CTS sent or its read queued.
	stMatched
	// stPulling: a receive reading its sender's memory: no withdraw now.
	// After a failed read it stays here while the data is pushed.
	stPulling
	// stExposed: an exposure, its region registered and its post sent; no
	// byte has landed.
	stExposed
	// stLanding: an exposure whose put has begun to land: no cancel now.
	stLanding
	// stScrap: an exposure cancelled before any byte landed: complete, but
	// still registered, so that a put already on its way lands in scratch
	// memory rather than failing as a put into an unknown region.
	stScrap
	// stDone: complete. Terminal.
	stDone
	numStates
)

// reqEvent is what happens to a request.
type reqEvent uint8

const (
	evPost    reqEvent = iota // a receive or put joins the posted list
	evEager                   // an eager send's packet (by reference, or inline) is submitted
	evRTS                     // a rendezvous send is announced with an RTS
	evRTSPull                 // a rendezvous send is announced with an RTS-pull
	evExpose                  // a region is exposed to a put and its post submitted
	// evFinish: the request ends in the step that started or matched it —
	// an eager send buffered, an eager message received, nothing to move
	// (a CTS for 0 bytes, a rendezvous accepting none, an empty exposure
	// or put), or a refusal there (a bad argument, a one-sided mismatch).
	evFinish
	evMatch       // a receive matched an RTS or RTS-pull: its region is registered
	evBulkStart   // the data goes out as a Bulk packet: a CTS asked for it, or a put matched its post
	evSent        // the eager or Bulk packet left (or failed)
	evPullStart   // the read of the sender's memory begins
	evPullDone    // the read is over: FIN queued
	evFIN         // the receiver read all of a pulled send
	evLand        // pushed bytes begin to land in the region (Region)
	evLanded      // all the region's bytes have landed (PutDone)
	evRefused     // the origin refused the exposed region (size mismatch)
	evWithdraw    // the sender asks to withdraw its pulled send (kindWithdraw)
	evWithdrawAck // the receiver agreed not to read the pulled send (kindWithdrawn)
	evPeerCancel  // the sender cancelled its rendezvous send (kindCancel)
	evCancel      // the user's Cancel
	evPeerLost    // the peer is unreachable (PeerLost, or a packet to it failed)
	evClose       // the engine closes
	numEvents
)

// reqTable gives the state an event moves each state to; stNew means the
// event is refused there.
type reqTable [numStates][numEvents]reqState

// reqMoves is the protocol. Rows list the events a state accepts; every
// other event is refused and changes nothing. Entries marked "as before"
// are reached only by a peer that breaks the protocol, or a rail that
// reports out of order; they keep what the engine did with them before
// the table (each one is questionable, and left for a change of its own).
var reqMoves = reqTable{
	stNew: {
		evPost: stPosted, evEager: stEager, evRTS: stRTS, evRTSPull: stPullRTS, evExpose: stExposed,
		// Matched an unexpected message at once (a receive or put).
		evFinish: stDone, evMatch: stMatched, evBulkStart: stBulk,
		evPeerLost: stDone, evClose: stDone,
	},
	stPosted: {
		evFinish: stDone, evMatch: stMatched, evBulkStart: stBulk,
		evCancel: stDone, evPeerLost: stDone, evClose: stDone,
	},
	stEager: {evSent: stDone},
	stRTS: {
		// A CTS asks for the data, or for none.
		evBulkStart: stBulk, evFinish: stDone,
		// Nothing has moved: a Cancel entry tells the receiver.
		evCancel:   stDone,
		evPeerLost: stDone, evClose: stDone,
	},
	stPullRTS: {
		// The FIN of the read; or the CTS of a failed one.
		evFIN: stDone, evBulkStart: stBulk, evFinish: stDone,
		// The receiver may be reading: ask it to withdraw, and wait.
		evCancel:   stWithdrawing,
		evPeerLost: stDone, evClose: stDone,
	},
	stWithdrawing: {
		evWithdrawAck: stDone,
		// The read had begun: its FIN, or the CTS of a failed one.
		evFIN: stDone, evBulkStart: stBulk, evFinish: stDone,
		// Asked already: wait for the answer.
		evCancel:   stWithdrawing,
		evPeerLost: stDone, evClose: stDone,
	},
	stBulk: {
		evSent: stDone,
		// As before: a rail reporting a send's RTS failed after its CTS
		// came ends the send while its data may still be read.
		evPeerLost: stDone,
	},
	stMatched: {
		// Read from the sender's memory; or pushed: bytes land, then the
		// last one.
		evPullStart: stPulling, evLand: stMatched, evLanded: stDone,
		// A pulled send withdrawn before its read began (as before for a
		// pushed one: no sender withdraws those); a cancelled send.
		evWithdraw: stDone, evPeerCancel: stDone,
		evPeerLost: stDone, evClose: stDone,
	},
	stPulling: {
		evPullDone: stDone,
		// After a failed read the data is pushed.
		evLand: stPulling, evLanded: stDone,
		// As before: a Cancel (no sender cancels a pulled send) ends the
		// receive while the read may still write its buffer.
		evPeerCancel: stDone,
		evPeerLost:   stDone, evClose: stDone,
	},
	stExposed: {
		evLand: stLanding, evRefused: stDone,
		evCancel: stScrap,
		// As before: a rail that ends a put without asking Region.
		evLanded: stDone,
		// As before: a Withdraw or Cancel naming send 0 (ids start at 1).
		evWithdraw: stDone, evPeerCancel: stDone,
		evPeerLost: stDone, evClose: stDone,
	},
	stLanding: {
		evLand: stLanding, evLanded: stDone,
		// As before: a refusal, or a Withdraw or Cancel naming send 0,
		// while a put lands.
		evRefused: stDone, evWithdraw: stDone, evPeerCancel: stDone,
		evPeerLost: stDone, evClose: stDone,
	},
	stScrap: {
		// The put on its way has landed, or was refused: the region goes.
		evLanded: stDone, evRefused: stDone,
		// As before: a Withdraw or Cancel naming send 0.
		evWithdraw: stDone, evPeerCancel: stDone,
		evPeerLost: stDone, evClose: stDone,
	},
	stDone: {},
}

// apply moves *s by ev if t allows it, and reports whether it did.
func (t *reqTable) apply(s *reqState, ev reqEvent) bool {
	next := t[*s][ev]
	if next == stNew {
		return false
	}
	*s = next
	return true
}

// move moves r by ev if the protocol allows it, and reports whether it
// did; a refused event leaves r as it was. The caller holds e.mu.
func (r *Request) move(ev reqEvent) bool { return reqMoves.apply(&r.state, ev) }

// can reports whether the protocol allows ev in r's state, without moving
// it: for a check that must pass before anything changes.
func (r *Request) can(ev reqEvent) bool { return reqMoves[r.state][ev] != stNew }

// step moves r by ev like move and, if that completes r, completes it with
// st and err. A scrapped exposure completed when it was cancelled: ending
// it later completes nothing again.
func (r *Request) step(ev reqEvent, st Status, err error) bool {
	from := r.state
	if !r.move(ev) {
		return false
	}
	if r.state.over() && !from.over() {
		r.complete(st, err)
	}
	return true
}

// over reports whether a request in s has completed (its user has its
// result), though a scrapped exposure still holds its region.
func (s reqState) over() bool { return s == stDone || s == stScrap }

var stateNames = [numStates]string{
	stNew: "new", stPosted: "posted", stEager: "eager", stRTS: "rts", stPullRTS: "pull-rts",
	stWithdrawing: "withdrawing", stBulk: "bulk", stMatched: "matched", stPulling: "pulling",
	stExposed: "exposed", stLanding: "landing", stScrap: "scrap", stDone: "done",
}

func (s reqState) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return "state?"
}

var eventNames = [numEvents]string{
	evPost: "post", evEager: "eager", evRTS: "rts", evRTSPull: "rts-pull", evExpose: "expose",
	evFinish: "finish", evMatch: "match", evBulkStart: "bulk-start", evSent: "sent",
	evPullStart: "pull-start", evPullDone: "pull-done", evFIN: "fin", evLand: "land",
	evLanded: "landed", evRefused: "refused", evWithdraw: "withdraw", evWithdrawAck: "withdraw-ack",
	evPeerCancel: "peer-cancel", evCancel: "cancel", evPeerLost: "peer-lost", evClose: "close",
}

func (ev reqEvent) String() string {
	if ev < numEvents {
		return eventNames[ev]
	}
	return "event?"
}
