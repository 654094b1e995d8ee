package comm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/core"
)

// Every rank of a communicator must make the same collective calls with
// matching arguments. MPI calls a program that does not erroneous, and
// MPIs hang on it; commtune makes every rank that joined such a call return
// an error within a bounded time instead, at no cost to calls that match.
// The same holds when a rank leaves a call for another reason (a lost
// peer, its context's end): the ranks still in the call may be waiting
// for it, directly or through a chain of others.
//
//   - A rank that leaves a call on an error of its own (a message of the
//     wrong size, a lost peer, its context's end) tells every other rank
//     why before it withdraws its pending requests and returns: an abort,
//     a lost peer (naming it) or a quit. A rank told so fails its call
//     with that cause, and does not repeat it. Being told first, a rank
//     whose receive sees the sender withdraw its message reports the
//     sender's cause, not the withdrawal (explain).
//   - A call's messages carry its number and signature in their tag
//     (collrun.go), so a rank that disagrees never matches them. A rank
//     whose call has waited collLook looks through what the ranks it
//     waits for sent it unmatched: a message of this call under another
//     signature means its sender disagrees, and the rank aborts the call,
//     telling every rank — without the sender's help, which may have
//     finished the call, having only sent, and gone on computing.
//   - A rank whose call has waited collWatch tells the ranks it waits for
//     the call's signature: the algorithm, root and size it runs. A rank
//     that receives a signature unlike its own for the same call (running
//     or among its recent ones) aborts it, telling every rank — as the
//     signature arrives, even while it makes no call (notesArrived). Ranks whose
//     schedules differ (different sizes pick different algorithms) wait
//     for messages that never come; this ends the wait. Telling only the
//     ranks waited for is enough: ranks that agree finish together unless
//     one of them waits for a rank that disagrees (or has left), and that
//     wait tells it. Telling every rank made each slow call a message to
//     every peer — at 256 ranks starting together, tens of thousands, each
//     giving its pair's shared-memory ring memory.
//   - A waiting rank looks for aborts and signatures from collLook on,
//     every collRewatch.
//   - A rank told that a call it finished was abandoned, or disagreed on,
//     is out of step with its peers: every later call fails (broken).
//
// The messages travel in the communicator's collective context with their
// own tag; a call that never waits sends and reads none.
const (
	tagCollControl = 1
	collWatch      = 200 * time.Millisecond
	// collLook is how long a call waits before it first looks at what
	// peers said and at what the ranks it waits for sent it unmatched: a
	// look costs no message, so it comes long before the signature.
	collLook = collWatch / 4
	// collRewatch is how often a call that has watched once looks again:
	// having told its signature, it waits for an answer (an abort) that
	// comes within a message's time if the ranks disagree. A look when no
	// control message came is an atomic load.
	collRewatch    = collWatch / 8
	recentCalls    = 64 // finished calls whose signatures are kept
	maxControlText = 1024
)

// Control message kinds: [kind][seq u64][word u64][text].
const (
	controlSignature = 1 // word: the signature's hash; text: the call's description
	controlAbort     = 2 // the ranks disagree on the call; text: how
	controlLost      = 3 // word: the world rank lost; text: what the sender saw
	controlQuit      = 4 // the sender left for another reason; text: why
	// controlSignatureDirect is a signature said by a rank running the
	// call directly (team.go), waiting in the team for the rank it tells.
	controlSignatureDirect = 5
)

// noteWait bounds how long a rank whose receive saw its sender withdraw
// the message waits for the reason, which the sender sends first but
// which may come through another rail — or from a third rank, whose note
// made the sender leave, over another connection: 8 ranks on 2 processors
// beside other tests' jobs waited past 500 ms for one (an Exscan then
// reported the withdrawal, not the disagreement). A note always comes
// unless its sender died, which the engine reports at once.
const noteWait = 2 * time.Second

// Sig is what ranks must agree on for one call: the algorithm (which
// names the operation), the root of a rooted operation and the size of a
// fixed-size one; root and bytes are -1 where they do not apply. Its hash
// is computed without allocating: every call has one, few ever send it.
type Sig struct {
	hash        uint64
	alg         string
	root, bytes int
}

func signature(op coll.Operation, alg coll.Algorithm, l coll.Layout) Sig {
	return namedSignature(op, alg.Name(), l)
}

// TextSignature is the signature of a call described by desc alone.
func TextSignature(desc string) Sig {
	return Sig{hash: fnv(fnvBasis, desc), alg: desc, root: -1, bytes: -1}
}

// FNV-1a, 64 bits: signatures hash without allocating.
const (
	fnvBasis = 14695981039346656037
	fnvPrime = 1099511628211
)

func fnv(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// namedSignature is signature with the algorithm given by name.
func namedSignature(op coll.Operation, name string, l coll.Layout) Sig {
	s := Sig{alg: name, root: -1, bytes: -1}
	switch op {
	case coll.OpBcast, coll.OpReduce, coll.OpScatter, coll.OpGather, coll.OpScatterv, coll.OpGatherv:
		s.root = l.Root
	}
	switch op {
	case coll.OpBarrier, coll.OpScatterv, coll.OpGatherv, coll.OpAllgatherv, coll.OpAlltoallv:
	default:
		s.bytes = l.Bytes
	}
	// FNV-1a over the name, then the two numbers.
	h := fnv(fnvBasis, s.alg)
	for _, v := range []int{s.root, s.bytes} {
		for i := 0; i < 8; i++ {
			h = (h ^ uint64(byte(v>>(8*i)))) * fnvPrime
		}
	}
	s.hash = h
	return s
}

// describe says the signature in words: "allreduce/ring, 1024 bytes".
func (s Sig) describe() string {
	d := s.alg
	if s.root >= 0 {
		d += fmt.Sprintf(", root %d", s.root)
	}
	if s.bytes >= 0 {
		d += fmt.Sprintf(", %d bytes", s.bytes)
	}
	return d
}

// collCoord is a communicator's record of its collective calls, for the
// exchanges above.
type collCoord struct {
	drain  sync.Mutex // one goroutine at a time reads control messages
	mu     sync.Mutex
	active map[uint64]*CallState
	recent [recentCalls]finished // by sequence number modulo recentCalls
	notes  map[uint64][]callNote // said by peers of calls not begun here
	// arrived counts the control messages that came unexpected (all of
	// them: no receive is posted for them but while draining), drained
	// how many of them had when the last drain began: a call begins by
	// draining only when the two differ.
	arrived *atomic.Uint64
	drained atomic.Uint64
	// answering: a goroutine reads the control messages as they arrive
	// (notesArrived).
	answering atomic.Bool
	// broken is why every later call fails: a peer left a call this rank
	// finished, or said it calls something else there. The ranks are out
	// of step, so a call made now might complete with another call's
	// messages, or wait for messages that never come.
	broken     error
	brokenFlag atomic.Bool // broken is set: read without the lock
	// Direct calls (team.go) pass no message and are not in active or
	// recent: direct holds the numbers of those finished, by number
	// modulo recentCalls, one store each. A peer's note of one of them —
	// a signature said by a rank passing messages in it, or why a rank
	// left it — means the ranks disagree, or are out of step. Notes of a
	// direct call that came while it ran wait in notes until it looks
	// (watchDirect) or ends; pending is len(notes), read without the
	// lock.
	direct  [recentCalls]atomic.Uint64
	pending atomic.Int64
}

// finished is a call that ended on this rank.
type finished struct {
	seq uint64 // 0: none yet (calls are numbered from 1)
	sig Sig
}

// CallState is one call in progress on this rank.
type CallState struct {
	seq     uint64
	sig     Sig
	tag     int   // of the call's messages (callTag)
	failed  error // set when the call must end: a peer's abort, a mismatch
	noted   bool  // failed is what a peer said, and that peer told everyone
	told    bool  // this rank has told the others why it left
	sigSent bool
}

// callNote is what a peer said of a call.
type callNote struct {
	kind byte
	from int    // rank in the communicator
	word uint64 // the signature's hash, or the lost world rank
	text string
}

func (c *Comm) coord() *collCoord {
	if co := c.coll.Load(); co != nil {
		return co
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if co := c.coll.Load(); co != nil {
		return co
	}
	co := &collCoord{active: map[uint64]*CallState{}, notes: map[uint64][]callNote{}}
	co.arrived = c.ep.Eng.Watch(c.collCtx, tagCollControl, func() { c.notesArrived(co) })
	c.coll.Store(co)
	if co.arrived.Load() != 0 {
		c.notesArrived(co) // notes that came before the watch, which did not call back
	}
	return co
}

// notesArrived is called as a control message arrives, by whoever
// delivers it: a goroutine reads it at once, so that a rank that makes no
// call — the one that disagreed on a call where it only sent, and went on
// computing — still answers a peer's signature, and the peers waiting in
// that call end within the rule's bound, not at this rank's next call.
func (c *Comm) notesArrived(co *collCoord) {
	if co.answering.CompareAndSwap(false, true) {
		go c.answerNotes(co)
	}
}

// answerNotes drains the control messages until none is left unread,
// waiting its turn while a call drains.
func (c *Comm) answerNotes(co *collCoord) {
	for {
		if !c.drainNotes() {
			time.Sleep(time.Millisecond) // a call is reading them
			continue
		}
		co.answering.Store(false)
		if co.arrived.Load() == co.drained.Load() || !co.answering.CompareAndSwap(false, true) {
			return
		}
	}
}

// beginCall records call seq as in progress, in st, with what peers already said of
// it; a mismatch found there, or a communicator out of step (broken), fails
// it at once. It reads the control messages that came since the last look
// first, so that a rank that finished a call its peers abandoned fails the
// next one it makes once their word is here, even a call that would not
// wait.
func (c *Comm) beginCall(st *CallState, seq uint64, sig Sig) {
	co := c.coord()
	if co.arrived.Load() != co.drained.Load() {
		c.drainNotes()
	}
	*st = CallState{seq: seq, sig: sig, tag: callTag(seq, sig)}
	co.mu.Lock()
	co.active[seq] = st
	if co.broken != nil {
		st.failed, st.noted = co.broken, true
	}
	if m := c.team.Load(); m != nil && st.failed == nil {
		if f := m.t.broken.Load(); f != nil {
			st.failed, st.noted = f.err, true // a direct call left the ranks out of step
		}
	}
	notes := co.notes[seq]
	delete(co.notes, seq)
	co.pending.Store(int64(len(co.notes)))
	co.mu.Unlock()
	for _, n := range notes {
		c.apply(n, seq)
	}
}

// endCall moves call seq to the recent ones.
func (c *Comm) endCall(seq uint64) {
	co := c.coord()
	co.mu.Lock()
	defer co.mu.Unlock()
	if st := co.active[seq]; st != nil {
		delete(co.active, seq)
		co.recent[seq%recentCalls] = finished{seq, st.sig}
		if st.failed != nil {
			// A peer's word that the call must end came while it ran,
			// and it finished here all the same: the peers are out of
			// step with it, as when the word comes after (apply).
			c.breakLocked(seq, st.failed)
		}
	}
	for s := range co.notes {
		if s+recentCalls < seq {
			delete(co.notes, s) // said of calls long past: nobody waits on them
		}
	}
	co.pending.Store(int64(len(co.notes)))
}

// abandon tells every other rank that this rank leaves call st because
// of err, once, unless a peer's note made it leave: that peer told
// everyone. Calls it before withdrawing the call's pending requests, so
// that a peer whose receive sees a withdrawal has the reason already.
func (c *Comm) abandon(st *CallState, err error) {
	co := c.coord()
	co.mu.Lock()
	skip := st.told || st.noted
	st.told = true
	// The ranks no longer agree on where they are: the calls after this
	// one fail too.
	c.breakLocked(st.seq, err)
	co.mu.Unlock()
	if skip {
		return
	}
	c.tellWhy(st.seq, err)
}

// tellWhy tells every peer why this rank left call seq unfinished.
func (c *Comm) tellWhy(seq uint64, err error) {
	var lost *core.PeerLostError
	switch {
	case mismatched(err):
		c.tellPeers(controlAbort, seq, 0, err.Error())
	case errors.As(err, &lost):
		why := "peer lost"
		if lost.Err != nil {
			why = lost.Err.Error()
		}
		c.tellPeers(controlLost, seq, uint64(lost.Rank), why)
	default:
		c.tellPeers(controlQuit, seq, 0, err.Error())
	}
}

// explain returns what made call st fail, given err, the error of one of
// its requests. When err may be only the effect of a peer's leaving — a
// withdrawn send, or a lost peer, which may have closed after it left —
// it is the note of the peer that left first, if one came, or the
// disagreement this rank found itself (a peer told of it may withdraw
// before this rank's request ends: no note will come); otherwise err. A
// withdrawal is always explained by a note, sent before it; explain waits
// up to noteWait for it to arrive.
func (c *Comm) explain(st *CallState, err error) error {
	var w *core.WithdrawnError
	withdrawn := errors.As(err, &w)
	if !withdrawn && !errors.Is(err, core.ErrPeerLost) {
		return err
	}
	co := c.coord()
	for deadline := time.Now().Add(noteWait); ; time.Sleep(time.Millisecond) {
		c.drainNotes()
		co.mu.Lock()
		failed := st.failed // a peer's note, or what this rank found and told
		co.mu.Unlock()
		if failed != nil {
			return failed
		}
		if withdrawn && c.revoked.Load() {
			// The peer withdrew because it revoked the communicator
			// (after a loss): its note, on a revoked context, cannot
			// be read any more.
			return c.revokedErr()
		}
		if !withdrawn || time.Now().After(deadline) {
			return err
		}
	}
}

// tellPeers sends a control message to every other rank of the
// communicator, or to the world ranks to, if given.
func (c *Comm) tellPeers(kind byte, seq, hash uint64, text string, to ...int) {
	if len(text) > maxControlText {
		text = text[:maxControlText]
	}
	if to == nil {
		to = c.group
	}
	me := c.group[c.rank]
	for _, w := range to {
		if w == me || w < 0 {
			continue
		}
		msg := make([]byte, 17+len(text)) // its own: sent by reference, never reused
		msg[0] = kind
		binary.LittleEndian.PutUint64(msg[1:], seq)
		binary.LittleEndian.PutUint64(msg[9:], hash)
		copy(msg[17:], text)
		c.ep.Eng.Isend(c.collCtx, w, tagCollControl, msg) // completes on its own; a lost peer fails it
	}
}

// watch is what a call does each time it has waited a while: read what
// peers said, look through what they sent unmatched (strayMessages),
// fail if the call must end, and, when tell is set (it has waited
// collWatch), say its own signature once, to the world ranks waitingFor
// returns (nil: to every rank).
func (c *Comm) watch(st *CallState, waitingFor func() []int, tell bool) error {
	co := c.coord()
	if co.arrived.Load() != co.drained.Load() {
		c.drainNotes()
	}
	co.mu.Lock()
	failed, send := st.failed, tell && !st.sigSent
	st.sigSent = st.sigSent || tell
	co.mu.Unlock()
	if failed != nil {
		return failed
	}
	if err := c.watchOuter(); err != nil {
		return err
	}
	if err := c.strayMessages(st); err != nil {
		co.mu.Lock()
		first := st.failed == nil
		if first {
			st.failed, st.told = err, true
			c.breakLocked(st.seq, err)
		}
		co.mu.Unlock()
		if first {
			c.tellPeers(controlAbort, st.seq, 0, err.Error())
		}
		return err
	}
	if send {
		var to []int
		if waitingFor != nil {
			to = waitingFor()
		}
		c.tellPeers(controlSignature, st.seq, st.sig.hash, st.sig.describe(), to...)
	}
	return nil
}

// strayMessages looks through what peers sent that waits unexpected for
// a message of call st under another signature: its sender disagrees on
// the call. Its message never matches (the tags differ), and the sender
// may have finished the call, having only sent: the waiting rank must
// tell, without its help. Any peer's such message tells, not only a
// message of a rank this one waits for: the sender's schedule may send
// to ranks this one's never waits on.
func (c *Comm) strayMessages(st *CallState) error {
	for _, m := range c.ep.Eng.Pending(c.collCtx, core.AnySource) {
		if m.Tag >= tagCallFirst && m.Tag != st.tag && sameCall(m.Tag, st.tag) {
			return fmt.Errorf("%w: rank %d sent a message of this call (%d bytes) under another algorithm, root, size or way of choosing than rank %d's %s",
				core.ErrSizeMismatch, c.fromWorld(m.Source), m.Count, c.rank, st.sig.describe())
		}
	}
	return nil
}

// waitCall waits for r, a request of call st, as block does and, once it
// has waited collLook, then every collRewatch, watches the call (telling
// its signature once it has waited collWatch) and looks at others, the
// call's requests still to be waited for: if the call must end, or one of
// those has failed (a lost peer, whatever r waits for), r is withdrawn
// (what cannot be, data already moving, finishes first) and the reason
// returned.
func (c *Comm) waitCall(ctx context.Context, st *CallState, r *core.Request, others []*core.Request) (Status, error) {
	var waited time.Duration
	for wait := collLook; ; wait = collRewatch {
		rst, done, err := r.WaitFor(ctx, wait)
		if done {
			return c.Status(rst), err
		}
		waited += wait
		if err == nil {
			err = c.watch(st, func() []int {
				peers := []int{r.Peer()}
				for _, o := range others {
					if !slices.Contains(peers, o.Peer()) {
						peers = append(peers, o.Peer())
					}
				}
				return peers
			}, waited >= collWatch)
		}
		for _, o := range others {
			if err != nil {
				break
			}
			if _, done, oerr := o.Test(); done {
				err = oerr
			}
		}
		if err == nil {
			continue
		}
		if !r.Cancel() {
			r.Wait(context.Background())
		}
		return Status{}, err
	}
}

// drainNotes reads and applies every control message that has arrived,
// and reports whether it did: false when another goroutine drains.
// Concurrent calls (nonblocking collectives) drain too: the one that
// drains takes every message it probed; the others read the result.
func (c *Comm) drainNotes() bool {
	co := c.coord()
	locked := co.drain.TryLock()
	if !locked {
		return false
	}
	// What arrives from here on is for the next drain to read.
	co.drained.Store(co.arrived.Load())
	for {
		pst, ok, err := c.ep.Eng.Iprobe(c.collCtx, core.AnySource, tagCollControl)
		if err != nil || !ok {
			co.drain.Unlock()
			return true
		}
		buf := make([]byte, min(pst.Count, 17+maxControlText))
		r := c.ep.Eng.IrecvTemp(c.collCtx, pst.Source, tagCollControl, buf)
		rst, rerr := r.Wait(context.Background()) // probed: here already
		c.ep.Eng.Release(r)
		if rerr != nil && !errors.Is(rerr, core.ErrTruncate) {
			// The engine refuses what it showed (closed or revoked
			// meanwhile): probing again would find the same message.
			co.drain.Unlock()
			return true
		}
		if rst.Count < 17 {
			continue
		}
		n := callNote{kind: buf[0], from: c.fromWorld(pst.Source), word: binary.LittleEndian.Uint64(buf[9:]),
			text: string(buf[17:min(rst.Count, len(buf))])}
		c.apply(n, binary.LittleEndian.Uint64(buf[1:]))
	}
}

// watchNow returns why call st must end, if it already must (what peers
// said of it before it began).
func (c *Comm) watchNow(st *CallState) error {
	co := c.coord()
	co.mu.Lock()
	defer co.mu.Unlock()
	return st.failed
}

// apply takes in what a peer said of call seq.
func (c *Comm) apply(n callNote, seq uint64) {
	co := c.coord()
	co.mu.Lock()
	st := co.active[seq]
	f := co.recent[seq%recentCalls]
	past, isPast := f.sig, f.seq == seq
	var abortWhy error
	signature := n.kind == controlSignature || n.kind == controlSignatureDirect
	switch {
	case st == nil && !isPast && co.direct[seq%recentCalls].Load() == seq:
		abortWhy = c.directNoteLocked(n, seq, 0)
	case st == nil && !isPast:
		// Not begun here, or a direct call running: see at begin, or
		// when the direct call looks.
		co.notes[seq] = append(co.notes[seq], n)
		co.pending.Store(int64(len(co.notes)))
	case !signature && st != nil:
		if st.failed == nil {
			st.failed, st.noted = c.noteError(n, ""), true
		}
	case !signature:
		// A call this rank finished: the peers are out of step with it, so
		// whatever it waits for now may never come, and what a call that
		// does not wait gets may be another call's.
		c.breakLocked(seq, c.noteError(n, "an earlier collective call, which this rank finished"))
	case st != nil && n.word != st.sig.hash:
		if st.failed == nil && !st.told {
			abortWhy = fmt.Errorf("%w: rank %d calls %s, rank %d %s", core.ErrSizeMismatch, n.from, n.text, c.rank, st.sig.describe())
			st.failed, st.told = abortWhy, true
		}
	case st == nil && n.word != past.hash:
		// This rank finished the call, having only sent (what it received
		// matched its own signature): its peers cannot.
		abortWhy = fmt.Errorf("%w: rank %d calls %s, rank %d called %s", core.ErrSizeMismatch, n.from, n.text, c.rank, past.describe())
		c.breakLocked(seq, fmt.Errorf("%w (in an earlier collective call, which this rank finished)", abortWhy))
	}
	co.mu.Unlock()
	if abortWhy != nil {
		c.tellPeers(controlAbort, seq, 0, abortWhy.Error())
	}
}

// breakLocked makes every call of c from now on fail with err, and the
// calls in progress begun after call seq that have not failed yet: the
// ranks are out of step since seq. co.mu is held.
func (c *Comm) breakLocked(seq uint64, err error) {
	co := c.coll.Load()
	if co.broken == nil {
		co.broken = err
		co.brokenFlag.Store(true)
	}
	for _, other := range co.active {
		if other.seq > seq && other.failed == nil {
			other.failed, other.noted = co.broken, true
		}
	}
	if m := c.team.Load(); m != nil {
		m.fail(co.broken) // its members may wait for this rank, or it for them
	}
}

// directNoteLocked takes in what a peer said of call seq, which this rank
// runs or ran directly, and returns why to abort it, if the peer passes
// messages in it: a signature from a rank running it directly too is
// the team's to compare (Meet). co.mu is held.
func (c *Comm) directNoteLocked(n callNote, seq, mine uint64) (abortWhy error) {
	switch n.kind {
	case controlSignatureDirect:
		if mine == 0 || n.word == mine {
			break
		}
		// Both pass no message, by different algorithms (a team's and
		// the node segment's) or sizes: neither would see the other.
		abortWhy = fmt.Errorf("%w: rank %d calls %s, rank %d another call through memory the ranks share",
			core.ErrSizeMismatch, n.from, n.text, c.rank)
		c.breakLocked(seq-1, abortWhy)
	case controlSignature:
		abortWhy = fmt.Errorf("%w: rank %d calls %s, rank %d a direct algorithm (through memory the ranks share, passing no message)",
			core.ErrSizeMismatch, n.from, n.text, c.rank)
		c.breakLocked(seq-1, abortWhy)
	default:
		c.breakLocked(seq-1, c.noteError(n, "a collective call this rank ran through memory the ranks share"))
	}
	return abortWhy
}

// beginDirect starts a direct call, which passes no message: it reads
// what peers said since the last look and fails if the communicator is out
// of step. Most calls pay three loads.
func (c *Comm) beginDirect() error {
	co := c.coord()
	if co.arrived.Load() == co.drained.Load() && !co.brokenFlag.Load() {
		return nil
	}
	return c.beginDirectSlow(co)
}

// beginDirectSlow is beginDirect when a note came or c is out of step.
func (c *Comm) beginDirectSlow(co *collCoord) error {
	c.drainNotes()
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.broken
}

// endDirect ends direct call seq: a note that comes for it from now on
// finds it among the finished ones, and one that came while it ran is
// taken in now. Most calls pay a store and three loads.
func (c *Comm) endDirect(seq uint64) {
	co := c.coord()
	co.direct[seq%recentCalls].Store(seq)
	if co.arrived.Load() != co.drained.Load() || co.pending.Load() != 0 {
		c.drainNotes()
		c.takeDirectNotes(seq, 0)
	}
}

// takeDirectNotes takes in what peers said of direct call seq, running or
// finished, that waits in notes.
func (c *Comm) takeDirectNotes(seq, mine uint64) {
	co := c.coord()
	var aborts []error
	co.mu.Lock()
	for _, n := range co.notes[seq] {
		if why := c.directNoteLocked(n, seq, mine); why != nil {
			aborts = append(aborts, why)
		}
	}
	delete(co.notes, seq)
	co.pending.Store(int64(len(co.notes)))
	co.mu.Unlock()
	for _, why := range aborts {
		c.tellPeers(controlAbort, seq, 0, why.Error())
	}
}

// watchDirect is what direct call seq, of operation op by algorithm name
// on layout l, does
// while it waits for member from, from collLook on: take in what peers
// said (a disagreement breaks the team, ending the wait), and, when tell
// is set (it has waited collWatch), tell from, once, what this rank
// calls: a member that passes messages in this call waits for none from
// here, and learns so from that.
func (c *Comm) watchDirect(seq uint64, op coll.Operation, name string, l coll.Layout, from int, tell bool, told *bool) {
	co := c.coord()
	if co.arrived.Load() != co.drained.Load() {
		c.drainNotes()
	}
	sig := namedSignature(op, name, l)
	if co.pending.Load() != 0 {
		c.takeDirectNotes(seq, sig.hash)
	}
	if !tell || *told || from < 0 || from >= len(c.group) {
		return
	}
	*told = true
	c.tellPeers(controlSignatureDirect, seq, sig.hash, sig.describe(), c.group[from])
}

// noteError is the error a peer's note of why it left a call gives the
// ranks still in it; which, if not "", names the call when it is not the
// one failing.
func (c *Comm) noteError(n callNote, which string) error {
	in := ""
	if which != "" {
		in = " " + which
	}
	switch n.kind {
	case controlAbort:
		if which == "" {
			return fmt.Errorf("%w: rank %d abandoned the call: %s", core.ErrSizeMismatch, n.from, n.text)
		}
		return fmt.Errorf("%w: rank %d abandoned%s (%s)", core.ErrSizeMismatch, n.from, in, n.text)
	case controlLost:
		seer := n.from
		if n.from >= 0 && n.from < len(c.group) {
			seer = c.group[n.from]
		}
		return &core.PeerLostError{Rank: int(min(n.word, 1<<31)), Err: fmt.Errorf("seen by rank %d%s: %s", seer, in, n.text)}
	default:
		return fmt.Errorf("commtune: rank %d left%s: %s", n.from, in, n.text)
	}
}

// mismatched reports errors that mean the ranks disagree on a call.
func mismatched(err error) bool {
	return errors.Is(err, core.ErrSizeMismatch) || errors.Is(err, core.ErrTruncate)
}

// Begin starts a watched call of c that is not a collective operation (a
// Halo's exchange): it takes its place in the order of c's collective
// calls, under signature sig, and fails at once if a peer has already
// said it calls something else there. The first of c's calls, whatever
// it is, makes c's node segment (makeSegment), with ctx.
func (c *Comm) Begin(ctx context.Context, st *CallState, sig Sig) error {
	seq := c.nextCollCall()
	c.makeSegment(ctx, seq)
	c.beginCall(st, seq, sig)
	return c.watchNow(st)
}

// End ends the watched call st.
func (c *Comm) End(st *CallState) { c.endCall(st.seq) }

// Fail ends the watched call st with err: it returns what a peer said made
// the call fail, when one did, else err, and tells the other ranks why
// this one leaves, so that none of them waits for it.
func (c *Comm) Fail(st *CallState, err error) error {
	err = c.explain(st, err)
	c.abandon(st, err)
	return err
}
