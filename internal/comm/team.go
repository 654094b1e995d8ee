package comm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/core"
)

// Goroutine ranks of one process (Local) share an address space, so their
// collective calls read each other's buffers in place (coll.Direct): a
// team per communicator, made by its first member, holds one slot per
// rank where each publishes its buffers and counts the fences it has
// reached. A rank waits for the others by reading their counts: no
// message, no ring, and no wake-up when they are already there.
//
// Every rank makes the same fences in the same order (a call's fences
// depend on its operation and size alone), so a slot's count is a clock
// all ranks share: "every slot at s or beyond" means every rank has
// reached fence s. A call starts with a meeting (a fence after
// publishing). Published buffers alternate between two places by the
// parity of the call; before a rank writes one, every rank has met in the
// call before (Meet waits for that when the last meeting did not), so
// nobody still reads what the place held two calls ago.
//
// A place's first cache line holds what a waiting peer needs of a small
// call: the step of the meeting, the call's signature and the first bytes
// of the inline input. An 8-byte Allreduce thus moves one line per peer.

// team is one communicator's shared state.
type team struct {
	slots    []teamSlot
	sleepers atomic.Int32                // members parked waiting
	broken   atomic.Pointer[teamFailure] // why a rank left a call unfinished
	left     atomic.Int32                // members that closed their communicator after joining
}

// teamFailure is why the team can no longer meet.
type teamFailure struct{ err error }

// teamSlot is one member's part of the team, a whole number of cache
// lines. step sits alone on its line: the others spin reading it.
type teamSlot struct {
	step atomic.Uint64 // fences reached
	_    [56]byte
	pub  [2]teamPub // by the call's parity
	// parked says the member sleeps on wake (waitFor).
	parked atomic.Bool
	wake   chan struct{}
	_      [48]byte
}

// teamPub is what a member publishes for one call. The line a peer reads
// first: meet, sig, n and the first 32 bytes of data.
type teamPub struct {
	meet    atomic.Uint64 // the step of the call's meeting: written last
	sig     callSig       // every member's must match
	n       uint64        // inline: bytes of data in use
	data    [coll.InlineMax]byte
	in, out []byte
	_       [48]byte
}

// callSig is what members of a team must agree on in a call, in two
// words: the operation and root, the bytes and element size.
type callSig [2]uint64

func signatureOf(op coll.Operation, l coll.Layout) callSig {
	return callSig{uint64(opIndex(op))<<32 | uint64(uint32(l.Root)), uint64(l.Bytes)<<8 | uint64(uint8(l.Elem))}
}

func opIndex(op coll.Operation) int {
	for i, o := range coll.Operations {
		if o == op {
			return i
		}
	}
	return len(coll.Operations)
}

func (s callSig) String() string {
	op := "an unknown operation"
	if i := int(s[0] >> 32); i < len(coll.Operations) {
		op = string(coll.Operations[i])
	}
	return fmt.Sprintf("%s of %d bytes (root %d)", op, s[1]>>8, int32(uint32(s[0])))
}

// teamSlotsMin is the fewest slots a team allocates: 32 KiB and more
// are allocated whole pages, so every slot, and the first line of every
// place in it, starts on a cache line.
var teamSlotsMin = (32<<10)/int(unsafe.Sizeof(teamSlot{})) + 1

// teamKey names a team among a process's: collective contexts may repeat
// between communicators that share no rank (the colors of a Split), whose
// first members differ.
type teamKey struct {
	ctx   uint64
	first int
}

// teamOf returns c's team member, making the team on first use; nil when
// c's ranks do not all share this process.
func (c *Comm) teamOf() *teamMember {
	if m := c.team.Load(); m != nil {
		return m
	}
	sh := c.ep.Shared
	if sh == nil {
		return nil
	}
	p := len(c.group)
	key := teamKey{c.collCtx, c.group[0]}
	t, ok := sh.Teams.Load(key)
	if !ok { // the first member here makes it
		made := &team{slots: make([]teamSlot, max(p, teamSlotsMin))[:p]}
		for i := range made.slots {
			made.slots[i].wake = make(chan struct{}, 1)
		}
		t, _ = sh.Teams.LoadOrStore(key, made)
	}
	spin := c.ep.Cfg.SpinWait
	switch {
	case spin == 0:
		spin = core.DefaultSpinWait
	case spin < 0:
		spin = 0
	}
	m := &teamMember{c: c, t: t.(*team), key: key, rank: c.rank, spin: spin, yield: p > runtime.GOMAXPROCS(0),
		timer: time.NewTimer(time.Hour)}
	m.timer.Stop()
	if !c.team.CompareAndSwap(nil, m) {
		return c.team.Load()
	}
	return m
}

// leave takes this member out of its team as its communicator closes; the
// last of them drops the team from the process's, so that communicators
// made and closed over and over do not keep one each. Every member must
// have left, not just those that joined: a member that only gives (the
// rank of a small Reduce that is not the root) can finish, and close, before
// the root has even made its member, which must then find the same team.
func (m *teamMember) leave() {
	if int(m.t.left.Add(1)) == len(m.t.slots) {
		m.c.ep.Shared.Teams.CompareAndDelete(m.key, m.t)
	}
}

// teamMember is one rank's handle on its communicator's team: a
// coll.Team. Calls go through it one at a time, in the order they were
// made (tickets).
type teamMember struct {
	c     *Comm
	t     *team
	key   teamKey
	rank  int
	spin  time.Duration // how long to poll before parking
	yield bool          // more members than processors: yield while polling
	timer *time.Timer   // bounds a parked wait, to look for lost peers

	tickets atomic.Uint64 // calls prepared
	served  atomic.Uint64 // calls run

	// The running call's state.
	step     uint64 // fences this member reached
	calls    uint64 // calls run, whose parity picks the publishing place
	sig      callSig
	inline   bool
	lastMeet uint64 // the step of the last meeting
	metAll   bool   // it waited for every member
	// What the watch of a long wait needs (Comm.watchDirect): the call
	// (its number among the communicator's collective calls, operation
	// and layout), and whether it told its signature.
	call *Call
	told bool
}

// teamWait is the longest a parked member sleeps before it looks whether
// a peer was lost or the communicator closed.
const teamWait = time.Millisecond

// run runs call k's direct algorithm once the member's earlier calls have
// run (nonblocking calls run in goroutines of their own).
func (m *teamMember) run(ctx context.Context, k *Call) error {
	for i := 0; m.served.Load() != k.ticket-1; i++ {
		if err := ctx.Err(); err != nil {
			m.fail(err)
			m.served.Add(1)
			return err
		}
		if i < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
	defer m.served.Add(1)
	if f := m.t.broken.Load(); f != nil {
		return f.err
	}
	if err := ctx.Err(); err != nil {
		m.fail(err) // the others would wait for this rank
		return err
	}
	if err := m.c.beginDirect(); err != nil {
		m.fail(err) // the others would wait for this rank
		return err
	}
	m.sig = signatureOf(k.op, k.layout)
	m.call, m.told = k, false
	err := coll.RunDirect(ctx, m, k.op, k.layout, k.in, k.out, k.red)
	m.call = nil
	m.c.endDirect(k.seq)
	return err
}

// Meet publishes this member's buffers for the call (a copy of in when
// inline) and waits for the members it reads from to publish theirs.
func (m *teamMember) Meet(ctx context.Context, in, out []byte, inline bool, from int) error {
	if !m.metAll && m.lastMeet > 0 {
		// Some member may still read the place this call writes, from two
		// calls ago, until it has met in the last call.
		if err := m.waitFor(ctx, m.lastMeet, coll.All, false); err != nil {
			return err
		}
	}
	pub := &m.t.slots[m.rank].pub[m.calls&1]
	m.calls++
	if inline {
		// Only the place's first lines: a peer reads nothing else.
		pub.n = uint64(copy(pub.data[:], in))
	} else {
		pub.in, pub.out = in, out
	}
	pub.sig, m.inline = m.sig, inline
	m.step++
	m.lastMeet, m.metAll = m.step, from == coll.All
	pub.meet.Store(m.step)
	m.t.slots[m.rank].step.Store(m.step)
	m.wakeSleepers()
	if from == coll.Nobody {
		return nil
	}
	if err := m.waitFor(ctx, m.step, from, true); err != nil {
		return err
	}
	// Every member compares: if any differs, each that waited for all
	// finds one that differs from its own, and all leave the call having
	// met, so the team can meet again.
	lo, hi := 0, len(m.t.slots)
	if from >= 0 {
		lo, hi = from, from+1
	}
	for j := lo; j < hi; j++ {
		if other := m.t.slots[j].pub[(m.calls-1)&1].sig; other != m.sig {
			err := fmt.Errorf("%w: rank %d calls %v, rank %d %v (do all ranks make the same collective calls in the same order?)",
				core.ErrSizeMismatch, j, other, m.rank, m.sig)
			// Members that read from others only, or from nobody, may
			// have finished the call: the team is out of step, and
			// their next call must fail.
			m.fail(err)
			return err
		}
	}
	return nil
}

// In and Out return rank's buffers as published for the running call: In
// its copy when inline (Out has none then).
func (m *teamMember) In(rank int) []byte {
	pub := &m.t.slots[rank].pub[(m.calls-1)&1]
	if m.inline {
		return pub.data[:pub.n]
	}
	return pub.in
}

func (m *teamMember) Out(rank int) []byte {
	if m.inline {
		return nil
	}
	return m.t.slots[rank].pub[(m.calls-1)&1].out
}

// Fence waits until every member has reached this fence.
func (m *teamMember) Fence(ctx context.Context) error { return m.fence(ctx) }

// Leave ends the call: a fence, unless its buffers were copied (inline).
func (m *teamMember) Leave(ctx context.Context) error {
	if m.inline {
		return nil
	}
	return m.fence(ctx)
}

// fence counts one more fence reached, wakes the members parked for it,
// and waits for them all to reach it.
func (m *teamMember) fence(ctx context.Context) error {
	m.step++
	m.t.slots[m.rank].step.Store(m.step)
	m.wakeSleepers()
	return m.waitFor(ctx, m.step, coll.All, false)
}

// wakeSleepers wakes the members parked, if any, to look again.
func (m *teamMember) wakeSleepers() {
	if m.t.sleepers.Load() > 0 {
		m.t.wakeAll()
	}
}

// wakeAll wakes every parked member, which looks again.
func (t *team) wakeAll() {
	for i := range t.slots {
		if t.slots[i].parked.Load() {
			select {
			case t.slots[i].wake <- struct{}{}:
			default:
			}
		}
	}
}

// waitFor returns once member from (every member: coll.All) has reached
// step s: at its meeting of the running call when meeting, else at any
// fence. It polls (and yields, when members outnumber processors) for
// m.spin, then parks until a member reaching a fence wakes it.
func (m *teamMember) waitFor(ctx context.Context, s uint64, from int, meeting bool) error {
	t := m.t
	next, end := 0, len(t.slots) // members below next have reached s
	if from >= 0 {
		next, end = from, from+1
	}
	par := (m.calls - 1) & 1
	var start time.Time
	for polls := 0; ; polls++ {
		for next < end && m.reached(next, s, par, meeting) {
			next++
		}
		if next == end {
			return nil
		}
		if f := t.broken.Load(); f != nil {
			return f.err
		}
		if polls&31 != 31 {
			if m.yield {
				runtime.Gosched()
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			m.fail(err)
			return err
		}
		if start.IsZero() {
			start = time.Now()
		}
		if time.Since(start) < m.spin {
			continue
		}
		waited := &t.slots[next].step
		if meeting {
			waited = &t.slots[next].pub[par].meet
		}
		err := m.park(ctx, waited, s)
		if errors.Is(err, errParkTimeout) {
			err = m.stillThere(t, s)
			if waited := time.Since(start); err == nil && waited >= collLook {
				// A member that passes messages in this call (it
				// disagrees) never comes: tell it what this one calls.
				m.c.watchDirect(m.call.seq, m.call.op, directNames[m.call.op], m.call.layout, next, waited >= collWatch, &m.told)
			}
		}
		if err != nil {
			m.fail(err)
			return err
		}
	}
}

// reached reports whether member j has reached step s: at the meeting of
// the running call (its place par), or at any fence.
func (m *teamMember) reached(j int, s, par uint64, meeting bool) bool {
	if meeting {
		return m.t.slots[j].pub[par].meet.Load() >= s
	}
	return m.t.slots[j].step.Load() >= s
}

// errParkTimeout says a parked wait saw no fence for teamWait.
var errParkTimeout = errors.New("no fence reached")

// stillThere returns why the members short of fence s may never reach
// it, if one was lost or the communicator closed: after a look at the
// fence itself, since a member that reached it may have left since.
func (m *teamMember) stillThere(t *team, s uint64) error {
	for j := range t.slots {
		if t.slots[j].step.Load() >= s {
			continue
		}
		if err := m.c.ep.Eng.Lost(m.c.group[j]); err != nil {
			if t.slots[j].step.Load() >= s {
				continue // it reached the fence between the two looks, then left
			}
			return err
		}
	}
	return m.c.Check()
}

// park sleeps until woken, or teamWait has passed (errParkTimeout), or
// ctx ends.
func (m *teamMember) park(ctx context.Context, waited *atomic.Uint64, s uint64) error {
	t, me := m.t, &m.t.slots[m.rank]
	me.parked.Store(true)
	t.sleepers.Add(1)
	defer func() {
		t.sleepers.Add(-1)
		me.parked.Store(false)
	}()
	if waited.Load() >= s || t.broken.Load() != nil {
		return nil // it came meanwhile: no wake-up will
	}
	m.timer.Reset(teamWait)
	select {
	case <-me.wake:
		m.timer.Stop()
		return nil
	case <-ctx.Done():
		m.timer.Stop()
		return ctx.Err()
	case <-m.timer.C:
		return errParkTimeout
	}
}

// fail breaks the team with err: every member waiting in a call, now or
// later, returns it (a rank that leaves a call unfinished leaves the
// others unable to meet).
func (m *teamMember) fail(err error) {
	if m.c.ep.Closed() && !errors.Is(err, core.ErrPeerLost) {
		// This rank is gone (closed, or crashed in a test): to the
		// others it is a lost peer, as a process that died is.
		err = &core.PeerLostError{Rank: m.c.group[m.rank], Err: err}
	}
	f := &teamFailure{fmt.Errorf("rank %d left a collective call: %w", m.rank, err)}
	if m.t.broken.CompareAndSwap(nil, f) {
		m.t.wakeAll()
	}
}
