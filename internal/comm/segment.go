package comm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/nodecoll"
	"github.com/commtune/commtune/internal/noderegion"
)

// A communicator whose ranks are processes of one node runs its small
// collectives through a node segment (internal/nodecoll): each rank maps
// every rank's part, writes its own, and reads the others' — no message,
// request or matching. The segment is made at the communicator's first
// collective call (a communicator that makes none never pays for it);
// calls it cannot carry (too large, an operation it lacks, a forced
// algorithm, a lottery) pass messages as before.

// segmentMaxRanks is the most ranks a segment serves: every rank reads
// every other's part, which stops paying beyond a few tens of ranks.
const segmentMaxRanks = 16

// segmentNap is the longest a rank waiting on the segment sleeps before it
// looks for a lost peer, an ended context or a peer's note.
const segmentNap = time.Millisecond

// Tags of the segment's making, on the collective context.
const (
	tagSegmentPath = 4 // each rank's part, by its file's path
	tagSegmentOK   = 5 // whether a rank mapped every part
)

// segment is a communicator's node segment and the calls it carries.
type segment struct {
	_       [64]byte // goroutine ranks' segments are allocated side by side: no line shared
	once    sync.Once
	made    chan struct{} // closed once the making ended, either way
	ready   atomic.Bool   // made, with g
	without atomic.Bool   // made, without g: the calls pass messages
	g       *nodecoll.Group
	parts   [][]byte // mapped here; unmapped at close
	w       nodecoll.Waiter
	// heap: the parts of goroutine ranks, in ordinary memory, and their
	// key among the process's shared state.
	heap    *heapParts
	heapKey heapKey

	tickets atomic.Uint64 // calls prepared
	served  atomic.Uint64 // calls run

	// call is the Call of most of the segment's calls, made one after
	// another: a call from the pool costs more than the segment's own
	// work. callFree says it is not in use.
	call     Call
	callFree atomic.Bool

	// pending is the call a persistent request's start began on the
	// segment and has not ended (persistent.go): the next call the
	// segment carries ends it first, or waits until it has ended.
	// Calls are prepared in program order, which is where it is read.
	pending splitRef

	// The running call, for check; curBy, the persistent request whose
	// start last set it, which a start of the same request that follows
	// only renumbers (persistent.go).
	c      *Comm
	cur    segOp
	curBy  *Persistent
	ctx    context.Context
	looked time.Time // the last look for a peer's messages and notes
	// The last call's signature (signature).
	lastOp                        coll.Operation
	lastBytes, lastRoot, lastElem int
	lastSig                       nodecoll.Sig
	told                          bool
	_                             [64]byte // goroutine ranks' segments are allocated side by side
}

// segmentOps are the operations the segment carries.
func segmentOp(op coll.Operation) bool {
	switch op {
	case coll.OpBarrier, coll.OpBcast, coll.OpReduce, coll.OpAllreduce, coll.OpAllgather,
		coll.OpGather, coll.OpScatter, coll.OpScan, coll.OpExscan:
		return true
	}
	return false
}

// segmentFamily is the family name of the segment's algorithms.
const segmentFamily = "node-segment"

// segmentNames names each operation's segment algorithm.
var segmentNames = func() map[coll.Operation]string {
	m := map[coll.Operation]string{}
	for _, op := range coll.Operations {
		if segmentOp(op) {
			m[op] = string(op) + "/" + segmentFamily
		}
	}
	return m
}()

// SegmentAlgorithm returns the name of op's node-segment algorithm, if
// it has one: what WithAlgorithm takes (as "node-segment" too) to ask for
// it.
func SegmentAlgorithm(op coll.Operation) (string, bool) {
	name, ok := segmentNames[op]
	return name, ok
}

// SegmentCarries reports whether the node segment carries a call of op on
// ranks ranks of bytes (as coll.Layout counts them): what each rank
// publishes fits a slot.
func SegmentCarries(op coll.Operation, ranks, bytes int) bool {
	if !segmentOp(op) || ranks < 2 || ranks > segmentMaxRanks {
		return false
	}
	publish := bytes
	if op == coll.OpScatter {
		publish = bytes * ranks
	}
	return publish <= nodecoll.DefaultLayout.MaxData()
}

// isSegmentAlgorithm reports whether name asks for op's node-segment
// algorithm.
func isSegmentAlgorithm(op coll.Operation, name string) bool {
	return segmentOp(op) && (name == segmentFamily || name == segmentNames[op])
}

// segmentFor returns c's segment if it carries a call of op on l: what a
// rank publishes fits a slot, and, unless named (the caller asked for the
// segment), nothing asks for another algorithm.
func (c *Comm) segmentFor(op coll.Operation, l coll.Layout, named bool) *segment {
	if !segmentOp(op) {
		return nil
	}
	if !named {
		if _, forced := c.ep.Cfg.Forced(op); forced || c.ep.Cfg.DrawsEverything() {
			return nil
		}
	}
	if !SegmentCarries(op, len(c.group), l.Bytes) {
		return nil
	}
	s := c.segmentOf()
	if s == nil || s.madeWithout() {
		return nil
	}
	return s
}

// segmentOf returns c's segment, made or to be made, if c can have one:
// its ranks are processes of this node that reach each other through
// shared memory, not too many. What decides is the same on every rank,
// so all make it together (makeSegment).
func (c *Comm) segmentOf() *segment {
	if s := c.seg.Load(); s != nil {
		return s
	}
	if len(c.group) < 2 || len(c.group) > segmentMaxRanks {
		return nil
	}
	heap := c.ep.Shared != nil // goroutine ranks
	if heap && c.teamOf() == nil || !heap && !c.onNode.get(c.allShm) {
		return nil
	}
	s := &segment{made: make(chan struct{}), c: c}
	s.callFree.Store(true)
	if !c.seg.CompareAndSwap(nil, s) {
		return c.seg.Load()
	}
	if heap {
		// The parts are memory of this process: made at once, with no
		// exchange to agree on.
		s.once.Do(func() { s.makeHeap(c) })
	}
	return s
}

// heapParts are the parts of a communicator of goroutine ranks, in the
// process's shared state until the last of its ranks closes it.
type heapParts struct {
	parts [][]byte
	bells *nodecoll.ChanBells // goroutines park, rather than hold a thread in a futex
	left  atomic.Int32
}

// heapKey names a communicator's heapParts among the process's (as
// teamKey names teams).
type heapKey struct {
	ctx   uint64
	first int
}

// makeHeap makes the segment of goroutine ranks on ordinary memory.
func (s *segment) makeHeap(c *Comm) {
	defer func() {
		s.without.Store(s.g == nil)
		close(s.made)
	}()
	lay := nodecoll.DefaultLayout
	key := heapKey{c.collCtx, c.group[0]}
	v, _ := c.ep.Shared.Teams.LoadOrStore(key, &heapParts{parts: nodecoll.HeapParts(len(c.group), lay), bells: nodecoll.NewChanBells(len(c.group))})
	hp := v.(*heapParts)
	m := c.teamOf()
	spin := m.spin
	if !m.yield {
		spin = c.ep.Cfg.SegmentSpin(m.spin)
	}
	s.w = nodecoll.Waiter{Spin: spin, Nap: segmentNap, Gosched: m.yield, Bell: hp.bells, Check: s.check, Leaving: s.leaving,
		Describe: func(sig nodecoll.Sig) string { return callSig(sig).String() }}
	g, err := nodecoll.New(hp.parts, c.rank, lay, &s.w)
	if err != nil {
		return
	}
	s.g, s.heap, s.heapKey = g, hp, key
	s.ready.Store(true)
}

// makeSegment makes c's segment in its first collective call (seq 1),
// whichever it is: every rank makes that call, even ranks that disagree
// on what it is, so the making never waits for a rank that is elsewhere.
func (c *Comm) makeSegment(ctx context.Context, seq uint64) {
	if seq != 1 {
		return
	}
	if s := c.segmentOf(); s != nil {
		s.once.Do(func() { s.make(ctx, c) })
	}
}

// allShm reports whether every member reaches the others through shared
// memory.
func (c *Comm) allShm() bool {
	for _, w := range c.group {
		if w != c.ep.Eng.Rank() && c.ep.Transport(w) != "shm" {
			return false
		}
	}
	return true
}

// madeWithout reports whether the making of s ended without a segment.
func (s *segment) madeWithout() bool { return s.without.Load() }

// preparedSegment makes a call the segment carries.
func (c *Comm) preparedSegment(s *segment, op coll.Operation, l coll.Layout, in, out []byte, red coll.Reducer, commutative bool, o Options) *Call {
	if in != nil && out != nil && Overlap(in, out) {
		in = append([]byte(nil), in...) // the output is written before every input is read
	}
	var k *Call
	if s.callFree.CompareAndSwap(true, false) {
		k = &s.call
		k.home = s
	} else {
		k = callPool.Get().(*Call) // s.call is a nonblocking call's still
	}
	k.op, k.alg, k.plan, k.sched, k.in, k.out, k.red, k.x.c = op, coll.Algorithm{Op: op, Family: segmentFamily}, &directPlan, &directPlan.sched, in, out, red, c
	k.layout, k.commutative, k.choice, k.by = l, commutative, o.Choice, ChosenByTable
	k.seg = s
	k.ticket = s.tickets.Add(1)
	k.seq = c.nextCollCall()
	if s.pending.p != nil {
		k.after, s.pending = s.pending, splitRef{} // to end before k runs
	}
	return k
}

// segOp is one call the segment carries: what the operation needs, and
// what check and leaving tell the peers of it.
type segOp struct {
	seq     uint64 // the communicator's collective call number
	op      coll.Operation
	layout  coll.Layout
	in, out []byte
	red     coll.Reducer
}

// runSegment runs k on its segment once the calls prepared before it have
// run; if the segment could not be made, over messages.
func (k *Call) runSegment(ctx context.Context) error {
	s := k.seg
	if err := s.await(ctx, k.ticket); err != nil {
		return err
	}
	defer s.served.Add(1)
	if r := k.after; r.p != nil {
		k.after = splitRef{}
		if err := r.settle(ctx); err != nil {
			return err
		}
	}
	if !s.ready.Load() {
		select {
		case <-s.made:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if s.g == nil {
		return k.overMessages(ctx)
	}
	if err := s.run(ctx, segOp{k.seq, k.op, k.layout, k.in, k.out, k.red}); err != nil {
		return err
	}
	if k.Post != nil {
		k.Post()
	}
	if k.choice != nil {
		k.choice(Choice{Algorithm: segmentNames[k.op], By: k.by})
	}
	return nil
}

// await waits until the calls before ticket have run. A blocking call
// made after nonblocking ones that still run waits its turn here.
func (s *segment) await(ctx context.Context, ticket uint64) error {
	for s.served.Load() != ticket-1 {
		if err := ctx.Err(); err != nil {
			s.served.Add(1)
			return err
		}
		runtime.Gosched()
	}
	return nil
}

// run carries out o on the made segment.
func (s *segment) run(ctx context.Context, o segOp) error {
	c := s.c
	err := c.beginDirect()
	if err == nil {
		err = c.teamBroken()
	}
	if err != nil {
		// Out of step before the call: the peers waiting for this
		// rank's part must not wait for a loss.
		s.cur, s.curBy = o, nil
		s.g.Abort(err)
		s.cur = segOp{}
		return err
	}
	s.cur, s.curBy, s.ctx, s.looked, s.told = o, nil, ctx, time.Time{}, false
	err = s.carry(&o)
	s.cur, s.ctx = segOp{}, nil
	return s.ended(o.seq, o.op, err)
}

// ended ends call seq, of op, on the segment, which returned err.
func (s *segment) ended(seq uint64, op coll.Operation, err error) error {
	c := s.c
	c.endDirect(seq)
	if err != nil {
		return fmt.Errorf("commtune: %s (%s): %w", op, segmentNames[op], c.segmentError(seq, err))
	}
	return nil
}

// RunOnSegment makes a blocking call of op on l (Prepare's arguments, no
// options) through the node segment without a Call, when the segment is
// made and carries it and no nonblocking call of the communicator runs:
// it reports whether it did, and the call's error. Where it did not, the
// caller prepares the call as usual.
func (c *Comm) RunOnSegment(ctx context.Context, op coll.Operation, l coll.Layout, in, out []byte, red coll.Reducer) (bool, error) {
	if c.Check() != nil || Overlap(in, out) {
		return false, nil // Prepare reports the error, or copies the input
	}
	l.Size, l.Rank = len(c.group), c.rank
	s := c.segmentFor(op, l, false)
	if s == nil || !s.ready.Load() {
		return false, nil
	}
	if r := s.pending; r.p != nil {
		// A persistent start's call comes first: end it here when that
		// waits for nothing, or ctx cannot end meanwhile; else Prepare's
		// call waits for it (runSegment), heeding ctx.
		if !r.over() && !((ctx.Done() == nil || r.ready()) && r.p.endNow(r.gen)) {
			return false, nil
		}
		s.pending = splitRef{}
	}
	if s.tickets.Load() != s.served.Load() {
		return false, nil
	}
	// No call of the segment runs (every ticket served) and none can
	// start meanwhile: calls are prepared in program order, in this
	// goroutine, which is here. So this call takes no ticket: a locked
	// instruction would wait for the last call's publication to reach the
	// peers.
	return true, s.run(ctx, segOp{c.nextCollCall(), op, l, in, out, red})
}

// carry carries out o's operation on the segment's group.
func (s *segment) carry(o *segOp) error {
	g, l := s.g, o.layout
	sig := s.signature(o.op, l)
	switch o.op {
	case coll.OpBarrier:
		return g.Barrier(sig)
	case coll.OpBcast:
		return g.Bcast(sig, o.out, l.Root)
	case coll.OpReduce:
		return g.Reduce(sig, o.in, o.out, l.Root, nodecoll.Reducer(o.red))
	case coll.OpAllreduce:
		return g.Allreduce(sig, o.in, o.out, nodecoll.Reducer(o.red))
	case coll.OpAllgather:
		return g.Allgather(sig, o.in, o.out)
	case coll.OpGather:
		return g.Gather(sig, o.in, o.out, l.Root)
	case coll.OpScatter:
		return g.Scatter(sig, o.in, o.out, l.Root)
	case coll.OpScan, coll.OpExscan:
		return g.Scan(sig, o.in, o.out, nodecoll.Reducer(o.red), o.op == coll.OpExscan)
	}
	return fmt.Errorf("commtune: %s has no node-segment algorithm", o.op)
}

// signature returns the segment's signature of a call of op on l,
// computed once for a run of calls alike.
func (s *segment) signature(op coll.Operation, l coll.Layout) nodecoll.Sig {
	if op != s.lastOp || l.Bytes != s.lastBytes || l.Root != s.lastRoot || l.Elem != s.lastElem {
		s.lastOp, s.lastBytes, s.lastRoot, s.lastElem = op, l.Bytes, l.Root, l.Elem
		s.lastSig = nodecoll.Sig(signatureOf(op, l))
	}
	return s.lastSig
}

// overMessages runs k as the decision table has it, passing messages.
func (k *Call) overMessages(ctx context.Context) error {
	c := k.x.c
	alg, _, err := c.Algorithm(k.op, k.layout.Bytes, k.commutative, Options{})
	if err != nil {
		return err
	}
	p, err := c.plan(k.op, alg, k.layout, k.commutative)
	if err != nil {
		return err
	}
	k.seg, k.alg, k.plan, k.sched = nil, alg, p, &p.sched
	return k.run(ctx)
}

// check is what a rank waiting on the segment asks between polls: whether
// its context ended, a peer was lost, or a peer said the call is not the
// one it makes (a peer that passes messages in it tells so; see
// watchDirect).
func (s *segment) check(rank int, waited time.Duration) error {
	c, k := s.c, &s.cur
	if err := s.ctx.Err(); err != nil {
		return err
	}
	if c.revoked.Load() {
		return c.revokedErr()
	}
	if c.ep.Closed() {
		return core.ErrClosed // this rank crashed (a test's Endpoint.Crash)
	}
	if c.ep.Eng.Losses() != 0 {
		// A peer was lost, in this call or before it (a rank that gave
		// its part of an earlier call and died). Only the rank waited
		// for matters: one that closed after giving what this rank needs
		// owes it nothing more, and one that crashed ends its waiters'
		// calls, which end this one's (segmentError then names it).
		if err := c.ep.Eng.Lost(c.group[rank]); err != nil {
			return err
		}
	}
	co := c.coord()
	if co.brokenFlag.Load() {
		return c.brokenErr()
	}
	if err := c.teamBroken(); err != nil {
		return err
	}
	if waited < collLook {
		return nil
	}
	if now := time.Now(); now.Sub(s.looked) >= collRewatch {
		s.looked = now
		if err := c.passesMessages(k.seq); err != nil {
			return err
		}
		c.watchDirect(k.seq, k.op, segmentNames[k.op], k.layout, rank, false, nil)
		if err := c.watchOuter(); err != nil {
			return err
		}
		if !s.told {
			// Ranks that pass messages in this call disagree on it and
			// wait for messages from here: tell them all at once.
			s.told = true
			sig := namedSignature(k.op, segmentNames[k.op], k.layout)
			c.tellPeers(controlSignatureDirect, k.seq, sig.hash, sig.describe())
		}
		if co.brokenFlag.Load() {
			return c.brokenErr()
		}
	}
	return nil
}

// passesMessages returns an error if a peer sent a message of call seq,
// which this rank makes through the node segment: that peer makes
// another call (an operation or size the segment does not carry), and
// may wait for this rank's messages forever.
func (c *Comm) passesMessages(seq uint64) error {
	mine := callTag(seq, Sig{})
	for _, m := range c.ep.Eng.Pending(c.collCtx, core.AnySource) {
		if m.Tag >= tagCallFirst && sameCall(m.Tag, mine) {
			return fmt.Errorf("%w: rank %d sent a message of this call (%d bytes), which rank %d makes through the node segment: they call different operations or sizes",
				core.ErrSizeMismatch, c.fromWorld(m.Source), m.Count, c.rank)
		}
	}
	return nil
}

// lostMember returns the error of a member lost, if one is.
func (c *Comm) lostMember() error {
	for _, w := range c.group {
		if err := c.ep.Eng.Lost(w); err != nil {
			return err
		}
	}
	return nil
}

// teamBroken returns why the team of c's goroutine ranks can no longer
// meet, if it cannot: a disagreement in a direct call leaves the
// communicator out of step, whichever algorithm runs next.
func (c *Comm) teamBroken() error {
	if m := c.team.Load(); m != nil {
		if f := m.t.broken.Load(); f != nil {
			return f.err
		}
	}
	return nil
}

// brokenErr returns why c's collective calls are out of step.
func (c *Comm) brokenErr() error {
	co := c.coord()
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.broken
}

// leaving is told why this rank's segment calls stop, before its peers see
// them stop: the peers that pass messages (a disagreement), and those
// that look for the reason of an abort (segmentError), learn it from the
// note.
func (s *segment) leaving(err error) {
	if errors.Is(err, nodecoll.ErrAborted) {
		return // the peer that left first told everyone why
	}
	s.c.leaveCalls(s.cur.seq, mapSegmentError(err)) // seq 0 outside a call
}

// leaveCalls ends this rank's collective calls on c from seq on, which
// passed no message, because of err: every later call fails, and the
// peers — which may wait for this rank in seq, or run another algorithm
// there and wait for its messages — are told why, unless a peer's note
// broke c first (that peer told everyone).
func (c *Comm) leaveCalls(seq uint64, err error) {
	co := c.coord()
	co.mu.Lock()
	noted := co.brokenFlag.Load()
	c.breakLocked(seq, err)
	co.mu.Unlock()
	if !noted {
		c.tellWhy(seq, err)
	}
}

// segmentNoteWait is how long a rank that saw a peer abandon the call
// looks for the peer's reason (a lost rank, say) before it reports the
// abandon itself.
const segmentNoteWait = 100 * time.Millisecond

// segmentError returns the error a failed segment call reports: for a
// peer's abandon, the peer's reason, when it comes within segmentNoteWait
// (or this rank's own view of a lost peer).
func (c *Comm) segmentError(seq uint64, err error) error {
	if !errors.Is(err, nodecoll.ErrAborted) {
		return mapSegmentError(err)
	}
	why := c.abortReason(seq, err)
	co := c.coord()
	co.mu.Lock()
	c.breakLocked(seq, why) // the calls from here on fail too
	co.mu.Unlock()
	return why
}

// abortReason returns why a peer abandoned segment call seq, as
// segmentError reports it.
func (c *Comm) abortReason(seq uint64, err error) error {
	// The peer that left told why before it marked its part (leaving):
	// its note, or a crash this rank sees too, says more than the mark.
	co := c.coord()
	for deadline := time.Now().Add(segmentNoteWait); ; {
		if co.arrived.Load() != co.drained.Load() {
			c.drainNotes()
		}
		c.takeDirectNotes(seq, 0)
		if why := c.brokenErr(); why != nil && !errors.Is(why, nodecoll.ErrAborted) {
			return why
		}
		// A revoked communicator (a peer revoked it on a loss: its
		// note cannot be read any more) or this rank's own end.
		if err := c.Check(); err != nil {
			return err
		}
		if lost := c.lostMember(); lost != nil && !errors.Is(lost, driver.ErrPeerClosed) {
			return lost
		}
		if time.Now().After(deadline) {
			return mapSegmentError(err)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// mapSegmentError gives the segment's errors the library's kinds.
func mapSegmentError(err error) error {
	if errors.Is(err, nodecoll.ErrMismatch) || errors.Is(err, nodecoll.ErrAborted) {
		if !errors.Is(err, core.ErrSizeMismatch) {
			return fmt.Errorf("%w: %w", core.ErrSizeMismatch, err)
		}
	}
	return err
}

// make makes the segment: each rank creates its part, tells the others
// where, maps theirs, and tells whether it could; all then agree. It ends
// without a segment (the calls pass messages) if any rank could not, or
// ctx ended first on one of them.
func (s *segment) make(ctx context.Context, c *Comm) {
	defer func() {
		s.without.Store(s.g == nil)
		close(s.made)
	}()
	lay := nodecoll.DefaultLayout
	n, me := len(c.group), c.rank
	path, mine, err := noderegion.Create(noderegion.Dir(), lay.PartSize())
	parts := make([][]byte, n)
	parts[me] = mine
	release := func() {
		for _, p := range parts {
			noderegion.Unmap(p)
		}
		if path != "" {
			os.Remove(path)
		}
	}
	// Round one: where each part is ("" for none), sent before any wait.
	paths, err1 := c.exchange(ctx, tagSegmentPath, []byte(path))
	if err1 != nil {
		// A rank never came (ctx ended first), or one was lost: say no
		// and leave. A rank that got every part's path waits for this
		// answer; one that did not waits for none.
		c.tellAll(tagSegmentOK, []byte{0})
		release()
		return
	}
	ok := err == nil
	for r := range n {
		if !ok {
			break
		}
		if r == me {
			continue
		}
		m, err := noderegion.Map(string(paths[r]), lay.PartSize())
		if err != nil {
			ok = false
			break
		}
		parts[r] = m
	}
	// Round two: whether each mapped every part. Every rank got every
	// path, so every rank started, and each sends its answer without
	// waiting for anything more (or said no already): this wait ends
	// without the context's help.
	flag := []byte{0}
	if ok {
		flag[0] = 1
	}
	flags, err2 := c.exchange(context.Background(), tagSegmentOK, flag)
	if path != "" {
		os.Remove(path) // every rank has mapped it, or never will
		path = ""
	}
	for _, f := range flags {
		ok = ok && len(f) == 1 && f[0] == 1
	}
	if !ok || err2 != nil {
		release()
		return
	}
	spin, yield := c.ep.Eng.SpinWait()
	s.w = nodecoll.Waiter{Spin: c.ep.Cfg.SegmentSpin(spin), Nap: segmentNap, Yield: yield, Check: s.check, Leaving: s.leaving,
		Describe: func(sig nodecoll.Sig) string { return callSig(sig).String() }}
	g, err := nodecoll.New(parts, me, lay, &s.w)
	if err != nil {
		release()
		return
	}
	s.g, s.parts = g, parts
	s.ready.Store(true)
}

// exchange sends msg to every other rank with tag on the collective
// context and returns what each sent (its own at its rank). Every send
// leaves before the first wait.
func (c *Comm) exchange(ctx context.Context, tag int, msg []byte) ([][]byte, error) {
	n := len(c.group)
	out := make([][]byte, n)
	out[c.rank] = msg
	reqs := make([]*core.Request, n)
	c.tellAll(tag, msg)
	for r := range n {
		if r == c.rank {
			continue
		}
		out[r] = make([]byte, 4096)
		reqs[r] = c.ep.Eng.Irecv(c.collCtx, c.group[r], tag, out[r])
	}
	var first error
	for r, q := range reqs {
		if q == nil {
			continue
		}
		st, err := c.waitWatched(ctx, q)
		if err != nil {
			if !q.Cancel() {
				q.Wait(context.Background())
			}
			if first == nil {
				first = err
			}
			out[r] = nil
			continue
		}
		out[r] = out[r][:st.Count]
	}
	return out, first
}

// waitWatched waits for q; in a phase of a hierarchical call, looking at
// the call (watchOuter) from collLook on, every collRewatch: a rank that
// runs another algorithm in it never comes.
func (c *Comm) waitWatched(ctx context.Context, q *core.Request) (core.Status, error) {
	if c.outer.Load() == nil {
		return q.Wait(ctx)
	}
	for wait := collLook; ; wait = collRewatch {
		st, done, err := q.WaitFor(ctx, wait)
		if done {
			return st, err
		}
		if err := c.watchOuter(); err != nil {
			return st, err
		}
	}
}

// tellAll sends msg to every other rank with tag on the collective
// context; the sends complete on their own.
func (c *Comm) tellAll(tag int, msg []byte) {
	for r := range c.group {
		if r != c.rank {
			c.ep.Eng.Isend(c.collCtx, c.group[r], tag, msg)
		}
	}
}

// close unmaps the segment unless a call still runs on it.
func (s *segment) close() {
	select {
	case <-s.made:
	default:
		return
	}
	if s.heap != nil {
		if int(s.heap.left.Add(1)) == len(s.c.group) {
			s.c.ep.Shared.Teams.CompareAndDelete(s.heapKey, s.heap)
		}
		return
	}
	if s.g == nil || s.served.Load() != s.tickets.Load() || s.pending.p != nil && !s.pending.over() {
		return
	}
	for _, p := range s.parts {
		noderegion.Unmap(p)
	}
}
