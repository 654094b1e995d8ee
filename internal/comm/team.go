package comm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

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
// publishing), so a rank publishing for a call knows every rank has left
// the call before the last: published buffers alternate between two
// places by the parity of the call, and the place it writes is free.

// team is one communicator's shared state.
type team struct {
	slots    []teamSlot
	sleepers atomic.Int32                // members parked waiting
	broken   atomic.Pointer[teamFailure] // why a rank left a call unfinished
}

// teamFailure is why the team can no longer meet.
type teamFailure struct{ err error }

// teamSlot is one member's part of the team. step sits alone on its cache
// line: the others spin reading it.
type teamSlot struct {
	step atomic.Uint64 // fences reached
	_    [56]byte
	pub  [2]teamPub // by the call's parity; written before step
	// parked says the member sleeps on wake (waitAll).
	parked atomic.Bool
	wake   chan struct{}
	_      [64]byte
}

// teamPub is what a member publishes for one call.
type teamPub struct {
	in, out []byte
	call    directCall // every member's must match
	copied  [coll.InlineMax]byte
}

// directCall is what members of a team must agree on in a call.
type directCall struct {
	op                coll.Operation
	root, bytes, elem int
}

func (d directCall) String() string {
	return fmt.Sprintf("%s of %d bytes (root %d)", d.op, d.bytes, d.root)
}

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
	made := &team{slots: make([]teamSlot, p)}
	for i := range made.slots {
		made.slots[i].wake = make(chan struct{}, 1)
	}
	t, _ := sh.Teams.LoadOrStore(teamKey{c.collCtx, c.group[0]}, made)
	spin := c.ep.Cfg.SpinWait
	switch {
	case spin == 0:
		spin = core.DefaultSpinWait
	case spin < 0:
		spin = 0
	}
	m := &teamMember{c: c, t: t.(*team), rank: c.rank, spin: spin, yield: p > runtime.GOMAXPROCS(0),
		timer: time.NewTimer(time.Hour)}
	m.timer.Stop()
	if !c.team.CompareAndSwap(nil, m) {
		return c.team.Load()
	}
	return m
}

// teamMember is one rank's handle on its communicator's team: a
// coll.Team. Calls go through it one at a time, in the order they were
// made (tickets).
type teamMember struct {
	c     *Comm
	t     *team
	rank  int
	spin  time.Duration // how long to poll before parking
	yield bool          // more members than processors: yield while polling
	timer *time.Timer   // bounds a parked wait, to look for lost peers

	tickets atomic.Uint64 // calls prepared
	served  atomic.Uint64 // calls run

	// The running call's state.

	step   uint64 // fences this member reached
	calls  uint64 // calls run, whose parity picks the publishing place
	call   directCall
	inline bool
	ctx    context.Context
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
	l := k.layout
	m.call = directCall{k.op, l.Root, l.Bytes, l.Elem}
	return coll.RunDirect(ctx, m, k.op, l, k.in, k.out, k.red)
}

// Meet publishes this member's buffers for the call (a copy of in when
// inline) and waits for every member to publish theirs.
func (m *teamMember) Meet(ctx context.Context, in, out []byte, inline bool) error {
	s := &m.t.slots[m.rank]
	pub := &s.pub[m.calls&1]
	m.calls++
	if inline {
		n := copy(pub.copied[:], in)
		in = pub.copied[:n]
	}
	pub.in, pub.out, pub.call, m.inline = in, out, m.call, inline
	if err := m.fence(ctx); err != nil {
		return err
	}
	// Every member compares: if any differs, each finds one that differs
	// from its own, and all leave the call having met, so the team can
	// meet again.
	for j := range m.t.slots {
		if other := m.t.slots[j].pub[(m.calls-1)&1].call; other != m.call {
			return fmt.Errorf("%w: rank %d calls %v, rank %d %v (do all ranks make the same collective calls in the same order?)",
				core.ErrSizeMismatch, j, other, m.rank, m.call)
		}
	}
	return nil
}

// In and Out return rank's buffers as published for the running call.
func (m *teamMember) In(rank int) []byte  { return m.t.slots[rank].pub[(m.calls-1)&1].in }
func (m *teamMember) Out(rank int) []byte { return m.t.slots[rank].pub[(m.calls-1)&1].out }

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
	if m.t.sleepers.Load() > 0 {
		m.t.wakeAll()
	}
	return m.waitAll(ctx, m.step)
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

// waitAll returns once every member has reached fence s: it polls (and
// yields, when members outnumber processors) for m.spin, then parks until
// a member reaching a fence wakes it.
func (m *teamMember) waitAll(ctx context.Context, s uint64) error {
	t := m.t
	next := 0 // members below next have reached s
	var start time.Time
	for polls := 0; ; polls++ {
		for next < len(t.slots) && t.slots[next].step.Load() >= s {
			next++
		}
		if next == len(t.slots) {
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
		err := m.park(ctx, &t.slots[next], s)
		if errors.Is(err, errParkTimeout) {
			err = m.stillThere(t, s)
		}
		if err != nil {
			m.fail(err)
			return err
		}
	}
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
			return err
		}
	}
	return m.c.Check()
}

// park sleeps until woken, or teamWait has passed (errParkTimeout), or
// ctx ends.
func (m *teamMember) park(ctx context.Context, waited *teamSlot, s uint64) error {
	t, me := m.t, &m.t.slots[m.rank]
	me.parked.Store(true)
	t.sleepers.Add(1)
	defer func() {
		t.sleepers.Add(-1)
		me.parked.Store(false)
	}()
	if waited.step.Load() >= s || t.broken.Load() != nil {
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
	f := &teamFailure{fmt.Errorf("rank %d left a collective call: %w", m.rank, err)}
	if m.t.broken.CompareAndSwap(nil, f) {
		m.t.wakeAll()
	}
}
