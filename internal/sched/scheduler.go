package sched

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commtune/commtune/internal/driver"
)

// Scheduler holds one queue per destination and feeds its rails through a
// Strategy. Submit never blocks: if a rail is idle the calling goroutine runs
// the strategy and posts at once (the fast path); otherwise the packet waits
// and is scheduled by whoever sees the next rail go idle.
type Scheduler struct {
	dests   []*dest // by world rank
	pollers atomic.Pointer[[]driver.Poller]
	helped  atomic.Int32 // rails that are not driver.SelfPolled, of every peer
	// pollMu serializes changes to pollers; groups are the poll groups
	// (driver.PollGroup) it holds a rail of.
	pollMu sync.Mutex
	groups map[any]bool
}

// dest is one destination: its queue, its rails and the scheduling loop.
// Only one goroutine at a time runs the loop (running); others enqueue and
// leave, so posting order follows the strategy's plan.
type dest struct {
	pollers  atomic.Pointer[[]driver.Poller] // rails to poll, copy-on-write
	helped   atomic.Int32                    // rails that are not driver.SelfPolled
	mu       sync.Mutex
	strategy Strategy
	base     Strategy // SetPeerStrategy's, which SetStrategy(nil) restores
	q        Queue
	slots    []*slot
	states   []RailState
	plan     Plan
	running  bool
	corked   int // Cork calls not yet undone: hold the queue
	// now is the rail of a peer reached by that one rail when it takes
	// small packets at once (driver.Immediate): SendNow's fast path.
	now     driver.Immediate
	failed  error
	modeled bool // some rail has a Model: time frames (else never read the clock)
	lean    leanSearch
	// reports is set while the share search runs: the core asks the receiver of
	// each rendezvous to report when it landed (Scheduler.Reports).
	reports atomic.Bool
	// eagerFrames and eagerPackets count the Eager frames posted and the
	// packets they carried: how much aggregation happened.
	eagerFrames, eagerPackets int64
	// busyWaits counts the times packets were queued with every rail to the
	// peer busy: they waited for a rail to finish its frame.
	busyWaits int64
}

// slot is one rail and the frame it has in flight.
type slot struct {
	rail     driver.Rail
	frame    driver.Frame
	iov      [][]byte
	inflight []*Packet
	chunk    int // Bulk: bytes of inflight[0] in the frame

	// For a rail with a Model: when the frame in flight was posted (now's
	// clock) and how long its Model predicted it takes (ns).
	timed     bool
	postedAt  int64
	predicted float64
	// drainedAt is when the bytes a finished frame left in the kernel
	// (driver.Backlogger) are predicted to have arrived.
	drainedAt int64
	sent      int64 // payload bytes posted on this rail
}

// epoch is the origin of now's clock.
var epoch = time.Now()

// now returns a monotonic clock in ns; tests replace it.
var now = func() int64 { return int64(time.Since(epoch)) }

// New returns a scheduler for a job of size ranks using strategy s (Default
// if nil).
func New(size int, s Strategy) *Scheduler {
	if s == nil {
		s = Default{}
	}
	sc := &Scheduler{dests: make([]*dest, size)}
	for i := range sc.dests {
		sc.dests[i] = &dest{strategy: s, base: s, lean: leanSearch{rail: -1}}
	}
	return sc
}

// Strategy returns the strategy in use.
func (s *Scheduler) Strategy() Strategy {
	d := s.dests[0]
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.strategy
}

// SetStrategy makes st the strategy for every destination from its next
// scheduling decision on; nil gives each back its own (SetPeerStrategy,
// else New's).
func (s *Scheduler) SetStrategy(st Strategy) {
	for _, d := range s.dests {
		d.mu.Lock()
		d.strategy = st
		if st == nil {
			d.strategy = d.base
		}
		d.mu.Unlock()
	}
}

// SetPeerStrategy makes st peer's own strategy (nil: Default): rails and
// message rates differ from peer to peer.
func (s *Scheduler) SetPeerStrategy(peer int, st Strategy) {
	if st == nil {
		st = Default{}
	}
	d := s.dests[peer]
	d.mu.Lock()
	d.strategy, d.base = st, st
	d.mu.Unlock()
}

// Cork holds what is submitted to peer in its queue until the matching
// Uncork, so the strategy sees those packets together (MSG_MORE's idea:
// a caller about to send several messages to one peer). A corked packet
// does not progress: uncork before waiting for it.
func (s *Scheduler) Cork(peer int) {
	d := s.dests[peer]
	d.mu.Lock()
	d.corked++
	d.mu.Unlock()
}

// Uncork undoes one Cork; the last one schedules what was held.
func (s *Scheduler) Uncork(peer int) {
	d := s.dests[peer]
	d.mu.Lock()
	if d.corked > 0 {
		d.corked--
	}
	d.mu.Unlock()
	d.run()
}

// AddRail makes r available to reach r.Peer(). Packets submitted before a
// peer has any rail wait for it: a peer may talk to us as soon as its own
// connections are up, before ours are registered.
func (s *Scheduler) AddRail(r driver.Rail) {
	d := s.dests[r.Peer()]
	d.mu.Lock()
	d.slots = append(d.slots, &slot{rail: r})
	d.states = append(d.states, RailState{Caps: r.Caps()})
	if p, ok := r.(driver.Poller); ok {
		addPoller(&d.pollers, p)
		s.pollMu.Lock()
		if !s.groupPolled(p) {
			addPoller(&s.pollers, p)
		}
		s.pollMu.Unlock()
	}
	if sp, ok := r.(driver.SelfPolled); !ok || !sp.SelfPolled() {
		d.helped.Add(1)
		s.helped.Add(1)
	}
	d.now = nil
	if im, ok := r.(driver.Immediate); ok && len(d.slots) == 1 {
		d.now = im
	}
	d.mu.Unlock()
	d.run()
}

// groupPolled reports whether the all-peers list holds a poller of p's
// poll group already (driver.PollGroup): polling it takes in p's input
// too. The caller holds pollMu.
func (s *Scheduler) groupPolled(p driver.Poller) bool {
	g, ok := p.(driver.PollGroup)
	if !ok {
		return false
	}
	if s.groups == nil {
		s.groups = map[any]bool{}
	}
	key := g.PollGroup()
	if s.groups[key] {
		return true
	}
	s.groups[key] = true
	return false
}

// addPoller appends p to a copy-on-write list (callers serialize).
func addPoller(list *atomic.Pointer[[]driver.Poller], p driver.Poller) {
	var ps []driver.Poller
	if old := list.Load(); old != nil {
		ps = append(ps, *old...)
	}
	ps = append(ps, p)
	list.Store(&ps)
}

// SetModel makes m the model of peer's rail number rail, counted in the
// order AddRail gave peer's rails (nil removes it). Strategies see it in
// RailState.Model; the scheduler then times that rail's frames to fill
// RailState.BusyFor and feeds the durations of its Bulk chunks to
// m.Observe.
func (s *Scheduler) SetModel(peer, rail int, m *RailModel) error {
	if peer < 0 || peer >= len(s.dests) {
		return fmt.Errorf("sched: SetModel: no rank %d (job of %d)", peer, len(s.dests))
	}
	d := s.dests[peer]
	d.mu.Lock()
	defer d.mu.Unlock()
	if rail < 0 || rail >= len(d.states) {
		return fmt.Errorf("sched: SetModel: rank %d has no rail %d (%d rails)", peer, rail, len(d.states))
	}
	d.states[rail].Model = m
	d.modeled = false
	for i := range d.states {
		if d.states[i].Model != nil {
			d.modeled = true
		}
	}
	return nil
}

// CanPull reports whether a rail to peer can pull (driver.Puller).
func (s *Scheduler) CanPull(peer int) bool { return s.puller(peer) != nil }

// Pull copies len(dst) bytes at addr in peer's memory into dst through the
// first rail to peer that can (driver.Puller), in the calling goroutine.
func (s *Scheduler) Pull(peer int, dst []byte, addr uint64) error {
	p := s.puller(peer)
	if p == nil {
		return fmt.Errorf("sched: no rail to rank %d can pull", peer)
	}
	return p.Pull(dst, addr)
}

// PullV is Pull into the parts of dst in order, from consecutive bytes at
// addr: one vectored read where the rail offers it (driver.VecPuller),
// else one read per part.
func (s *Scheduler) PullV(peer int, dst [][]byte, addr uint64) error {
	p := s.puller(peer)
	if p == nil {
		return fmt.Errorf("sched: no rail to rank %d can pull", peer)
	}
	if vp, ok := p.(driver.VecPuller); ok {
		return vp.PullV(dst, addr)
	}
	for _, b := range dst {
		if len(b) == 0 {
			continue
		}
		if err := p.Pull(b, addr); err != nil {
			return err
		}
		addr += uint64(len(b))
	}
	return nil
}

// CanReadSpans reports whether the rail to peer that pulls can also read
// ranges of its memory (driver.SpanReader).
func (s *Scheduler) CanReadSpans(peer int) bool {
	_, ok := s.puller(peer).(driver.SpanReader)
	return ok
}

// ReadSpans copies the ranges src of peer's memory into the parts of dst
// through the rail to peer that pulls, in the calling goroutine.
func (s *Scheduler) ReadSpans(peer int, dst [][]byte, src []driver.Span) error {
	r, ok := s.puller(peer).(driver.SpanReader)
	if !ok {
		return fmt.Errorf("sched: no rail to rank %d can read its memory", peer)
	}
	return r.ReadSpans(dst, src)
}

// WriteSpans copies the parts of src into the ranges dst of peer's memory
// through the rail to peer that pulls, if it writes too, in the calling
// goroutine.
func (s *Scheduler) WriteSpans(peer int, dst []driver.Span, src [][]byte) error {
	r, ok := s.puller(peer).(driver.SpanWriter)
	if !ok {
		return fmt.Errorf("sched: no rail to rank %d can write its memory", peer)
	}
	return r.WriteSpans(dst, src)
}

func (s *Scheduler) puller(peer int) driver.Puller {
	d := s.dests[peer]
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, sl := range d.slots {
		if p, ok := sl.rail.(driver.Puller); ok {
			return p
		}
	}
	return nil
}

// Flush writes, in the calling goroutine, the rest of any frame to peer
// that a rail left to its background writer and the writer has not started
// (driver.Flusher); it reports whether it wrote anything.
func (s *Scheduler) Flush(peer int) bool {
	d := s.dests[peer]
	d.mu.Lock()
	var fs [4]driver.Flusher
	n := 0
	for i, sl := range d.slots {
		if f, ok := sl.rail.(driver.Flusher); ok && d.states[i].Busy && n < len(fs) {
			fs[n] = f
			n++
		}
	}
	d.mu.Unlock()
	did := false
	for _, f := range fs[:n] {
		if f.Flush() {
			did = true
		}
	}
	return did
}

// StartPolling and StopPolling bracket a goroutine's polling of peer's rails
// (every peer's for a negative peer): see driver.Poller.
func (s *Scheduler) StartPolling(peer int) {
	for _, p := range s.pollerList(peer) {
		p.StartPolling()
	}
}

// StopPolling ends StartPolling; attentive as in driver.Poller.
func (s *Scheduler) StopPolling(peer int, attentive bool) {
	for _, p := range s.pollerList(peer) {
		p.StopPolling(attentive)
	}
}

// Attend tells peer's rails (every peer's for a negative peer) that a wait
// just ended with its request complete without polling: see
// driver.Poller.
func (s *Scheduler) Attend(peer int) {
	for _, p := range s.pollerList(peer) {
		p.Attend()
	}
}

func (s *Scheduler) pollerList(peer int) []driver.Poller {
	list := &s.pollers
	if peer >= 0 {
		list = &s.dests[peer].pollers
	}
	if ps := list.Load(); ps != nil {
		return *ps
	}
	return nil
}

// SelfPolled reports whether every rail to peer (every peer for a
// negative peer) is driver.SelfPolled: a waiter's Poll then receives all
// it waits for without the process's other goroutines.
func (s *Scheduler) SelfPolled(peer int) bool {
	if peer >= 0 {
		d := s.dests[peer]
		return d.helped.Load() == 0 && d.pollers.Load() != nil
	}
	return s.helped.Load() == 0 && s.pollers.Load() != nil
}

// Poll receives, in the calling goroutine, whatever has arrived on the
// pollable rails from peer (every peer for a negative peer) and reports
// whether anything was delivered. Waiting goroutines call it instead of
// parking (driver.Poller says why).
func (s *Scheduler) Poll(peer int) bool {
	progress := false
	for _, p := range s.pollerList(peer) {
		if p.Poll() {
			progress = true
		}
	}
	return progress
}

// RailBytes returns, for each rail to peer, the payload bytes posted on
// it so far: how a strategy spread the traffic.
func (s *Scheduler) RailBytes(peer int) []int64 {
	d := s.dests[peer]
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]int64, len(d.slots))
	for i, sl := range d.slots {
		out[i] = sl.sent
	}
	return out
}

// EagerFrames returns how many Eager frames were posted to peer so far and
// how many packets they carried: packets over frames is how many messages
// aggregation put in a frame on average (1 without aggregation).
func (s *Scheduler) EagerFrames(peer int) (frames, packets int64) {
	d := s.dests[peer]
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.eagerFrames, d.eagerPackets
}

// BusyWaits returns how many times packets for any peer were queued while
// every rail to that peer was busy, and so waited for a rail to finish its
// frame.
func (s *Scheduler) BusyWaits() int64 {
	var n int64
	for _, d := range s.dests {
		if d == nil {
			continue
		}
		d.mu.Lock()
		n += d.busyWaits
		d.mu.Unlock()
	}
	return n
}

// Rails returns the capabilities of the rails that reach peer.
func (s *Scheduler) Rails(peer int) []driver.Caps {
	d := s.dests[peer]
	d.mu.Lock()
	defer d.mu.Unlock()
	caps := make([]driver.Caps, len(d.states))
	for i, st := range d.states {
		caps[i] = st.Caps
	}
	return caps
}

// SendNow writes head and body, one small Packet frame's body, to peer in
// the calling goroutine and reports whether it did: only when peer is reached by one
// rail that takes packets at once (driver.Immediate), with nothing queued
// or in flight to it, so order is kept. It is the fast path of a small
// message to an idle peer: no packet, queue, strategy or completion
// report. On false, Submit the packet as usual.
func (s *Scheduler) SendNow(peer int, head, body []byte) bool {
	d := s.dests[peer]
	d.mu.Lock()
	ok := d.now != nil && d.failed == nil && d.corked == 0 && !d.running && d.q.Len() == 0 &&
		!d.states[0].Busy && d.now.SendNow(head, body)
	if ok {
		d.eagerFrames++
		d.eagerPackets++
		d.slots[0].sent += int64(len(head) + len(body))
	}
	d.mu.Unlock()
	return ok
}

// Submit queues p for peer and schedules it if a rail is idle. p.Owner is
// told when p has left; if the peer is already lost, at once with the error.
func (s *Scheduler) Submit(peer int, p *Packet) {
	d := s.dests[peer]
	p.planned, p.finished, p.failed = 0, 0, nil
	p.vecLen = 0
	if p.Vec != nil {
		p.vecLen = vecLen(p.Vec)
	}
	d.mu.Lock()
	if d.failed != nil {
		err := d.failed
		d.mu.Unlock()
		p.Owner.Sent(p, err)
		return
	}
	d.q.Push(p) // with no rail yet, it waits for AddRail
	d.mu.Unlock()
	d.run()
}

// Idle is the NIC-idle event: rail r finished its background frame. It
// completes that frame's packets and schedules more.
func (s *Scheduler) Idle(r driver.Rail, err error) {
	d := s.dests[r.Peer()]
	d.mu.Lock()
	var sl *slot
	var idx int
	for i, x := range d.slots {
		if x.rail == r {
			sl, idx = x, i
			break
		}
	}
	if sl == nil || !d.states[idx].Busy {
		d.mu.Unlock()
		return
	}
	d.finishLocked(idx, sl, err)
}

// Fail marks peer lost: queued packets and later submissions complete with
// err. Frames already handed to a rail complete when the rail reports them.
func (s *Scheduler) Fail(peer int, err error) {
	d := s.dests[peer]
	d.mu.Lock()
	if d.failed == nil {
		d.failed = err
	}
	var failed []*Packet
	for p := d.q.Pop(); p != nil; p = d.q.Pop() {
		if p.Kind == Bulk {
			p.finished += p.Remaining()
			p.planned = p.bodyLen()
			if p.failed == nil {
				p.failed = err
			}
			if p.finished < p.planned {
				continue // chunks still in flight complete it
			}
		}
		failed = append(failed, p)
	}
	d.mu.Unlock()
	for _, p := range failed {
		p.Owner.Sent(p, err)
	}
}

// Drain waits until every queue to a live peer is empty and no frame is in
// flight, or ctx ends. Orderly shutdown uses it so that nothing is lost.
func (s *Scheduler) Drain(ctx context.Context) error {
	tick := time.NewTicker(200 * time.Microsecond)
	defer tick.Stop()
	for {
		busy := false
		for _, d := range s.dests {
			d.mu.Lock()
			busy = d.failed == nil && d.pendingLocked() > 0
			d.mu.Unlock()
			if busy {
				break
			}
		}
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// pendingLocked returns the number of packets queued or in flight to d;
// d.mu is held.
func (d *dest) pendingLocked() int {
	n := d.q.Len()
	for i := range d.states {
		if d.states[i].Busy {
			n++
		}
	}
	return n
}

// run is the scheduling loop. The goroutine that finds the loop idle runs it
// until no rail is idle or nothing is pending; rails are posted to without
// holding the lock, since an in-process rail may deliver synchronously and
// the peer may answer through this same scheduler.
func (d *dest) run() {
	d.mu.Lock()
	if d.running {
		d.mu.Unlock()
		return
	}
	d.running = true
	for {
		if d.failed != nil || d.corked > 0 || d.q.Len() == 0 {
			break
		}
		if !d.anyIdleLocked() {
			d.busyWaits++
			break
		}
		var t int64
		if d.modeled {
			t = now()
			d.busyForLocked(t)
		}
		d.leanLocked()
		d.plan.Reset()
		d.strategy.Schedule(&d.q, d.states, &d.plan)
		if len(d.plan.As) == 0 {
			break // the strategy prefers to wait for a rail
		}
		for i := range d.plan.As {
			a := &d.plan.As[i]
			if d.states[a.Rail].Busy {
				panic(fmt.Sprintf("sched: strategy %s assigned busy rail %d", d.strategy.Name(), a.Rail))
			}
			d.states[a.Rail].Busy = true
			sl := d.slots[a.Rail]
			sl.load(a)
			sl.sent += int64(a.frameLen())
			if a.Packets[0].Kind == Eager {
				d.eagerFrames++
				d.eagerPackets += int64(len(a.Packets))
			}
			if m := d.states[a.Rail].Model; m != nil && d.modeled {
				sl.timed, sl.postedAt, sl.predicted = true, t, m.Predict(a.frameLen())
			}
			if p := a.Packets[0]; p.solved > 0 {
				// Its other chunks are in this plan too.
				d.lean.planned(p.Region, p.bodyLen(), d.plan.share(p, d.lean.rail), p.solved)
				p.solved = 0
			}
		}
		posted := d.plan.As
		d.mu.Unlock()
		for i := range posted {
			idx := posted[i].Rail
			sl := d.slots[idx]
			done, err := sl.rail.Post(&sl.frame)
			if done || err != nil {
				d.mu.Lock()
				d.finishLocked(idx, sl, err)
			}
		}
		d.mu.Lock()
	}
	d.running = false
	d.mu.Unlock()
}

// leanLocked updates the share search (lean.go) and sets the rails' Share
// for the next decision.
func (d *dest) leanLocked() {
	if !d.modeled && d.lean.rail < 0 {
		return // nothing to search (and no Share set)
	}
	for i := range d.states {
		d.states[i].Searched, d.states[i].Share = false, 0
	}
	on := false
	if d.modeled {
		on = d.lean.update(d.states)
	} else {
		d.lean.stop()
	}
	if on != d.reports.Load() {
		d.reports.Store(on)
	}
	// A strategy that does not split (for a while) leaves the search
	// where it is.
	if _, splits := d.strategy.(Split); !on || !splits {
		return
	}
	st := &d.states[d.lean.rail]
	st.Searched, st.Share = true, d.lean.share()
}

// Reports reports whether the scheduler wants to know when rendezvous data
// sent to peer lands (Arrived): it is searching how to split it.
func (s *Scheduler) Reports(peer int) bool { return s.dests[peer].reports.Load() }

// Arrived is the receiver's report that the Bulk packet into its region
// landed ns after the receiver asked for it: the score of the split that
// sent it.
func (s *Scheduler) Arrived(peer int, region uint64, ns float64) {
	if peer < 0 || peer >= len(s.dests) {
		return
	}
	d := s.dests[peer]
	d.mu.Lock()
	d.lean.arrived(region, ns)
	d.mu.Unlock()
}

// SearchedShare returns the share search toward peer: the loaded rail whose share
// is searched (-1 when no search runs) and that share (0 before the first
// split).
func (s *Scheduler) SearchedShare(peer int) (rail int, share float64) {
	d := s.dests[peer]
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lean.rail, d.lean.center
}

// busyForLocked sets the rails' BusyFor at time t.
func (d *dest) busyForLocked(t int64) {
	for i := range d.states {
		st, sl := &d.states[i], d.slots[i]
		st.BusyFor = 0
		switch {
		case st.Busy && sl.timed:
			st.BusyFor = max(0, float64(sl.postedAt-t)+sl.predicted)
		case !st.Busy && sl.drainedAt > t:
			st.BusyFor = float64(sl.drainedAt - t)
		}
	}
}

// observeLocked feeds m the time sl's Bulk chunk took. A rail that
// reports a frame done once the kernel has taken it (driver.Backlogger)
// still holds the bytes not yet acknowledged: the time covers only the
// others, and the rest is predicted to drain at the rail's bandwidth.
func (d *dest) observeLocked(sl *slot, m *RailModel) {
	t := now()
	sent := sl.chunk
	if b, ok := sl.rail.(driver.Backlogger); ok {
		if q := b.Backlog(); q > 0 {
			sent = max(0, sent-q)
			if bw := m.Bandwidth(); bw > 0 {
				sl.drainedAt = t + int64(float64(q)/bw)
			}
		}
	}
	if sent >= ObserveMin {
		m.Observe(sent, float64(t-sl.postedAt))
	}
}

// frameLen returns the payload bytes of a's frame.
func (a *Assignment) frameLen() int {
	if a.Packets[0].Kind == Bulk {
		return a.Len
	}
	n := 0
	for _, p := range a.Packets {
		n += p.Len()
	}
	return n
}

func (d *dest) anyIdleLocked() bool {
	for i := range d.states {
		if !d.states[i].Busy {
			return true
		}
	}
	return false
}

// finishLocked marks rail idx idle, unlocks, completes the packets of its
// frame and runs the loop again. It is called with d.mu held and returns
// with it released.
func (d *dest) finishLocked(idx int, sl *slot, err error) {
	if sl.timed {
		if m := d.states[idx].Model; m != nil && err == nil {
			d.observeLocked(sl, m)
		}
		sl.timed = false
	}
	d.states[idx].BusyFor = 0
	var buf [16]*Packet
	done := buf[:0]
	for _, p := range sl.inflight {
		if p.Kind != Bulk {
			done = append(done, p)
			continue
		}
		p.finished += sl.chunk
		if err != nil && p.failed == nil {
			p.failed = err
		}
		if n := p.bodyLen(); p.finished == n && p.planned == n {
			done = append(done, p)
		}
	}
	sl.inflight = sl.inflight[:0]
	for i := range sl.iov {
		sl.iov[i] = nil // do not keep user buffers alive
	}
	d.states[idx].Busy = false
	d.mu.Unlock()
	for _, p := range done {
		e := err
		if p.Kind == Bulk {
			e = p.failed
		}
		p.Owner.Sent(p, e)
	}
	d.run()
}

// load builds the frame for assignment a into the slot's reused storage.
func (sl *slot) load(a *Assignment) {
	sl.inflight = append(sl.inflight[:0], a.Packets...)
	sl.iov = sl.iov[:0]
	f := &sl.frame
	f.Offload = a.Offload
	if a.Packets[0].Kind == Bulk {
		p := a.Packets[0]
		sl.chunk = a.Len
		f.Kind = driver.Put
		f.Method = p.Method
		f.Region = p.Region
		f.Offset = p.Offset + int64(a.Off)
		if p.Vec != nil {
			sl.iov = driver.AppendRange(sl.iov, p.Vec, a.Off, a.Len)
		} else {
			sl.iov = append(sl.iov, p.Body[a.Off:a.Off+a.Len])
		}
	} else {
		sl.chunk = 0
		f.Kind = driver.Packet
		f.Method, f.Region, f.Offset = 0, 0, 0
		for _, p := range a.Packets {
			if len(p.Head) > 0 {
				sl.iov = append(sl.iov, p.Head)
			}
			if p.Vec != nil {
				for _, b := range p.Vec {
					if len(b) > 0 {
						sl.iov = append(sl.iov, b)
					}
				}
			} else if len(p.Body) > 0 {
				sl.iov = append(sl.iov, p.Body)
			}
		}
	}
	f.Iov = sl.iov
}
