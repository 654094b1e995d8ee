package comm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/nodecoll"
)

// Persistent collective calls (MPI-4's MPI_Allreduce_init and its kin,
// commtune's …Init): a call whose arguments are checked and whose
// algorithm and plan are fixed once, at its init, and which each start
// runs again on the same buffers. An init passes no message and takes no
// place in the order of the communicator's calls; each start takes one,
// as a nonblocking call does, so every rank must start its persistent
// calls in the same order as its other collective calls.
//
// The algorithm is fixed at init, and never drawn by the lottery, which
// could switch it from one start to the next and choose differently on
// every rank: an init chooses as a nonblocking call does — the caller's
// option, else the configuration's forced algorithm, else the decision
// tables — which every rank computes alike from the same arguments and
// configuration. Every start carries its algorithm's signature (in its
// messages' tags, the node segment's slots or the team's places), so
// ranks that chose differently fail the start with ErrSizeMismatch
// rather than run different algorithms.
//
// What a start does again and again is what is left of a call once its
// decisions are made: a start of a call the node segment carries (small
// calls of ranks of one node) publishes this rank's part at once, in the
// caller's goroutine, and the wait that follows reads the others' parts
// in the waiter's goroutine — no Call, goroutine, channel or request
// (split.go in nodecoll says why the peers need nothing more of this rank
// once it has published). Other calls, and a segment call that cannot
// begin at once (another call of the segment still runs, or its slot is
// not yet free), are prepared at the start, on the algorithm and plan
// fixed at init, and handed to a goroutine of their own as nonblocking
// calls are; a Wait that comes before that goroutine has taken the call
// runs it itself.

// route is how a persistent call's starts run.
type route uint8

const (
	routeSegment  route = iota + 1 // the node segment, split in two where it can
	routeDirect                    // the team of goroutine ranks (team.go)
	routeHier                      // the hierarchical phases (hier.go)
	routeMessages                  // a schedule of messages (plan)
)

// A start's state, in the low bits of Persistent.word, with a start's
// number above them. Start n, until someone takes it to end or run it,
// leaves the word as start n-1 left it, over: a start that publishes in
// the caller's goroutine pays no store of its own, and the first to
// change the word from (n-1, over) to (n, running) ends it (a start
// posted on the segment) or runs it (any other).
const (
	stRunning = 1 // being ended, or running in its goroutine
	stOver    = 2 // over; err is its outcome
	stateBits = 2
)

// overWord and runningWord are the word of start gen over, and running.
func overWord(gen uint64) uint64    { return gen<<stateBits | stOver }
func runningWord(gen uint64) uint64 { return gen<<stateBits | stRunning }

// isOver reports whether word w says start gen is over: a later start
// has begun, or gen's is over.
func isOver(w, gen uint64) bool { return w >= overWord(gen) }

// Persistent is a collective call fixed for persistent starts.
type Persistent struct {
	c           *Comm
	route       route
	op          coll.Operation
	alg         coll.Algorithm
	plan        *plan
	by          string // who chose alg (Choice.By)
	layout      coll.Layout
	in, out     []byte
	red         coll.Reducer
	commutative bool
	choice      func(Choice)
	// tmpl is the Call Persist returns, never run itself: what its
	// caller sets on it (Post, commtune's loneLogical) each start takes.
	tmpl Call

	// The segment's route: the operation as the segment takes it, and
	// its signature; copyIn is the input's copy a start in place makes
	// first (the output is written before every input is read).
	seg    *segment
	segOp  nodecoll.Op
	segSig nodecoll.Sig
	copyIn []byte

	// gen is the last start's number; word its state, or the state of
	// the start before it until it is taken; err its outcome once over.
	// split says it was posted on the segment: o is what the segment
	// runs of it (segOp), and call its number among the segment's calls;
	// otherwise k is its call, prepared at its start.
	gen   uint64
	word  atomic.Uint64
	err   error
	split bool
	o     segOp
	call  uint64
	k     *Call
	// done is Done's channel for start doneGen, under mu; wantDone says
	// Done was asked for once, so an ending start closes it; handed is
	// the last start posted whose end Done handed to a goroutine.
	mu       sync.Mutex
	done     chan struct{}
	doneGen  uint64
	closed   bool
	handed   uint64
	wantDone atomic.Bool
}

// errActive is Start's error for a start not yet over.
var errActive = errors.New("commtune: persistent request started while active")

// Persist checks a collective call (Prepare's arguments) and fixes how it
// runs, for a persistent request whose starts run it on in and out. It
// returns a Call that is never run: its caller may set Post on it, and
// takes the request from it (Persistent).
func (c *Comm) Persist(op coll.Operation, l coll.Layout, in, out []byte, red coll.Reducer, commutative bool, o Options) (*Call, error) {
	p, err := c.persist(op, l, in, out, red, commutative, o)
	if err != nil {
		return nil, err
	}
	p.tmpl.persistent = p
	return &p.tmpl, nil
}

// Persistent returns the persistent call of a Call Persist returned (nil
// for any other).
func (k *Call) Persistent() *Persistent { return k.persistent }

func (c *Comm) persist(op coll.Operation, l coll.Layout, in, out []byte, red coll.Reducer, commutative bool, o Options) (*Persistent, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	l.Size, l.Rank = len(c.group), c.rank
	// The counts are the init's, whatever the caller does with its
	// slices later (MPI binds them at init too).
	l.Counts, l.Displs = slices.Clone(l.Counts), slices.Clone(l.Displs)
	l.SendCounts, l.SendDispls = slices.Clone(l.SendCounts), slices.Clone(l.SendDispls)
	l.RecvCounts, l.RecvDispls = slices.Clone(l.RecvCounts), slices.Clone(l.RecvDispls)
	p := &Persistent{c: c, op: op, layout: l, in: in, out: out, red: red, commutative: commutative, choice: o.Choice, by: ChosenByTable}
	p.word.Store(overWord(0))
	named := isSegmentAlgorithm(op, o.Algorithm)
	if o.Algorithm == "" || named {
		if s := c.segmentFor(op, l, named); s != nil {
			p.route, p.seg = routeSegment, s
			if named {
				p.by = ChosenByOption
			}
			p.segOp = nodecoll.Op{Kind: segmentKinds[op], Root: l.Root, In: in, Out: out, Red: nodecoll.Reducer(red)}
			p.segSig = nodecoll.Sig(signatureOf(op, l))
			if in != nil && out != nil && Overlap(in, out) {
				p.copyIn = make([]byte, len(in))
				p.segOp.In = p.copyIn
			}
			p.o = segOp{op: op, layout: l, in: p.segOp.In, out: out, red: red}
			return p, nil
		}
		if named {
			return nil, fmt.Errorf("commtune: %s runs only on ranks of one node (processes reaching each other through shared memory, or goroutine ranks), %d to %d of them, each giving at most %d bytes",
				segmentNames[op], 2, segmentMaxRanks, nodecoll.DefaultLayout.MaxData())
		}
	}
	_, forced := c.ep.Cfg.Forced(op)
	if a, ok := c.direct(op); ok && o.Algorithm == "" && !forced {
		p.route, p.alg, p.plan = routeDirect, a, &directPlan
		return p, nil
	}
	if a, ok := c.hierarchical(op, l.Bytes, commutative); ok && o.Algorithm == "" && !forced {
		p.route, p.alg = routeHier, a
		return p, nil
	}
	alg, auto, err := c.Algorithm(op, l.Bytes, commutative, o)
	if err != nil {
		return nil, err
	}
	switch {
	case o.Algorithm != "":
		p.by = ChosenByOption
	case !auto:
		p.by = ChosenByEnv
	}
	p.alg = alg
	if alg.IsHierarchical() {
		p.route = routeHier
		return p, nil
	}
	if p.plan, err = c.plan(op, alg, l, commutative); err != nil {
		return nil, err
	}
	p.route = routeMessages
	if alg.IsDirect() {
		p.route = routeDirect
	}
	return p, nil
}

// segmentKinds is each segment operation as nodecoll's Post takes it.
var segmentKinds = map[coll.Operation]nodecoll.Kind{
	coll.OpBarrier: nodecoll.KindBarrier, coll.OpBcast: nodecoll.KindBcast, coll.OpReduce: nodecoll.KindReduce,
	coll.OpAllreduce: nodecoll.KindAllreduce, coll.OpAllgather: nodecoll.KindAllgather, coll.OpGather: nodecoll.KindGather,
	coll.OpScatter: nodecoll.KindScatter, coll.OpScan: nodecoll.KindScan, coll.OpExscan: nodecoll.KindExscan,
}

// Operation returns the operation p runs.
func (p *Persistent) Operation() coll.Operation { return p.op }

// Comm returns the communicator the call was made for.
func (p *Persistent) Comm() *Comm { return p.c }

// Bytes is this rank's payload of one start (the layout's bytes).
func (p *Persistent) Bytes() int { return p.layout.Bytes }

// Path names the algorithm the starts run and who chose it.
func (p *Persistent) Path() (alg, by string) {
	switch p.route {
	case routeSegment:
		return segmentNames[p.op], p.by
	case routeDirect:
		return directNames[p.op], p.by
	}
	if p.plan != nil && p.plan.name != "" {
		return p.plan.name, p.by
	}
	return p.alg.Name(), p.by
}

// Start starts the call again: it takes its place in the order of the
// communicator's collective calls and returns without waiting for any
// rank. The previous start must be over (Wait, Test).
func (p *Persistent) Start() error {
	if err := p.c.Check(); err != nil {
		return err
	}
	if p.word.Load() != overWord(p.gen) {
		return errActive
	}
	p.gen++
	if p.route == routeSegment && p.startOnSegment(p.gen) {
		return nil
	}
	return p.startCall(p.gen)
}

// startOnSegment begins start gen on the node segment and publishes this
// rank's part, if it can without waiting: it reports whether it did.
func (p *Persistent) startOnSegment(gen uint64) bool {
	s := p.seg
	if !s.ready.Load() || s.tickets.Load() != s.served.Load() {
		return false // not made yet, or another call of the segment runs: in turn
	}
	if r := s.pending; r.p != nil {
		if !r.over() {
			return false // another start's call, begun, still to end
		}
		s.pending = splitRef{}
	}
	if !s.g.CanBegin() {
		return false // its slot is not free yet
	}
	p.o.seq, p.split = p.c.nextCollCall(), true
	if p.copyIn != nil {
		copy(p.copyIn, p.in)
	}
	call, over, err := s.post(p)
	if over {
		p.ended(gen, err)
		return true
	}
	p.call = call
	s.pending = splitRef{p, gen}
	return true
}

// startCall prepares start gen's call, with the algorithm and plan fixed
// at init, and hands it to a goroutine of its own, as a nonblocking call
// does; a Wait that comes before the goroutine has taken it runs it in
// its own goroutine instead (runNow), sparing the hand-over between the
// two.
func (p *Persistent) startCall(gen uint64) error {
	c := p.c
	o := Options{Choice: p.choice}
	var k *Call
	switch p.route {
	case routeSegment:
		k = c.preparedSegment(p.seg, p.op, p.layout, p.in, p.out, p.red, p.commutative, o)
		k.by = p.by
	case routeHier:
		var err error
		if k, err = c.preparedHier(p.op, p.alg, p.layout, p.in, p.out, p.red, p.commutative, o, p.by); err != nil {
			p.gen--
			return err
		}
	default:
		k = c.prepared(p.op, p.alg, p.plan, p.layout, p.in, p.out, p.red, p.commutative, o, false, p.by)
	}
	k.Post = p.tmpl.Post
	p.k, p.split = k, false
	go p.runNow(gen, k)
	return nil
}

// take takes start gen, to end or run it: false if another took it.
func (p *Persistent) take(gen uint64) bool {
	return p.word.CompareAndSwap(overWord(gen-1), runningWord(gen))
}

// runNow runs start gen's call k in the calling goroutine, unless
// another has taken it: it reports whether it did. k is not touched
// otherwise (whoever ran it handed it back).
func (p *Persistent) runNow(gen uint64, k *Call) bool {
	if !p.take(gen) {
		return false
	}
	p.over(gen, k.Run(context.Background(), false))
	return true
}

// post begins p's start, whose call is p.o, on the made segment and
// publishes this rank's part; it returns the call's number among the
// segment's and whether it is over for this rank (then with its
// outcome), else finish ends it. The segment's running call stays p.o
// until then (no other call of the segment runs before it ends), and
// after: a start of p that follows only renumbers it, where the calls of
// the segment in between have left it so (curBy).
func (s *segment) post(p *Persistent) (call uint64, over bool, err error) {
	c, o := s.c, &p.o
	err = c.beginDirect()
	if err == nil {
		err = c.teamBroken()
	}
	if err != nil {
		// Out of step before the call: the peers waiting for this
		// rank's part must not wait for a loss.
		s.cur, s.curBy = *o, nil
		s.g.Abort(err)
		s.cur = segOp{}
		return 0, true, err
	}
	if s.curBy == p {
		s.cur.seq = o.seq
	} else {
		s.cur, s.curBy = *o, p
	}
	s.ctx, s.looked, s.told = context.Background(), time.Time{}, false
	call, over, err = s.g.Post(p.segSig, &p.segOp)
	if over {
		return call, true, s.ended(o.seq, o.op, err)
	}
	return call, false, nil
}

// finish ends p's start, which post began as the segment's call number
// call: it reads the peers' parts, waiting for them as long as they take
// (the start's call ends only with its peers, as a nonblocking call
// started with a context that never ends).
func (s *segment) finish(p *Persistent, call uint64) error {
	err := s.g.Finish(call, &p.segOp)
	return s.ended(p.o.seq, p.o.op, err)
}

// endNow ends start gen, posted on the segment, in the calling goroutine,
// unless another has taken it: it reports whether it did.
func (p *Persistent) endNow(gen uint64) bool {
	if !p.take(gen) {
		return false
	}
	p.ended(gen, p.seg.finish(p, p.call))
	return true
}

// ended ends start gen, run on the segment, with err.
func (p *Persistent) ended(gen uint64, err error) {
	if err == nil {
		if p.tmpl.Post != nil {
			p.tmpl.Post()
		}
		if p.choice != nil {
			p.choice(Choice{Algorithm: segmentNames[p.op], By: p.by})
		}
	}
	p.over(gen, err)
}

// over records the outcome of start gen and wakes whoever waits on Done.
func (p *Persistent) over(gen uint64, err error) {
	p.err = err
	p.word.Store(overWord(gen))
	if p.wantDone.Load() {
		p.mu.Lock()
		if p.doneGen == gen && p.done != nil && !p.closed {
			close(p.done)
			p.closed = true
		}
		p.mu.Unlock()
	}
}

// ready reports whether ending the posted start would wait for nothing,
// polling a little (about a microsecond per round of a few dozen polls)
// before it says no.
func (p *Persistent) ready(polls int) bool {
	for i := 0; ; i++ {
		if p.seg.g.Ready(p.call, &p.segOp) {
			return true
		}
		if i >= polls {
			return false
		}
		if i%32 == 31 {
			runtime.Gosched()
		}
	}
}

// readyPolls is how many times a Wait whose context can end looks
// whether the peers' parts are all there before it hands the end of the
// call to a goroutine of its own and waits for that (a wait that may
// return early must not be the one waiting in the segment: the call ends
// only with its peers).
const readyPolls = 256

// Wait waits until the last start is over, or ctx ends: it reports
// whether it is over, and then its outcome (nil for a call never
// started). Once ctx has ended the start goes on; wait again. A start
// not yet taken by another goroutine is ended, or run, in the caller's
// goroutine where the wait then needs no context's end (ctx never ends,
// or a start posted on the segment finds every part it reads there).
func (p *Persistent) Wait(ctx context.Context) (bool, error) {
	gen := p.gen
	for {
		switch w := p.word.Load(); w {
		case overWord(gen):
			return true, p.err
		case overWord(gen - 1): // not taken yet
			switch {
			case p.split && (ctx.Done() == nil || p.ready(readyPolls)):
				if p.endNow(gen) {
					return true, p.err
				}
				continue // another goroutine took it meanwhile
			case !p.split && ctx.Done() == nil:
				if p.runNow(gen, p.k) {
					return true, p.err
				}
				continue
			}
		}
		select {
		case <-p.doneFor(gen, p.split):
			return true, p.err
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// Test reports whether the last start is over and then its outcome; a
// start posted on the segment whose peers' parts are all there ends
// here. A start not over yields the processor first: a loop of Tests
// then leaves it to the goroutines that end the start (a start's own, or
// the peers' of goroutine ranks), which with fewer processors than
// goroutines would otherwise wait for the scheduler to take it away.
func (p *Persistent) Test() (bool, error) {
	gen := p.gen
	switch w := p.word.Load(); w {
	case overWord(gen):
		return true, p.err
	case overWord(gen - 1):
		if p.split && p.ready(0) && p.endNow(gen) {
			return true, p.err
		}
	}
	runtime.Gosched()
	return false, nil
}

// Done returns a channel closed once the last start is over (closed
// already if there is none). A start posted on the segment that nobody
// ends yet is ended in a goroutine of its own: whoever selects on the
// channel may make no other call.
func (p *Persistent) Done() <-chan struct{} { return p.doneFor(p.gen, p.split) }

// doneFor is Done of start gen, posted on the segment if split: closed if
// that start is over.
func (p *Persistent) doneFor(gen uint64, split bool) <-chan struct{} {
	p.mu.Lock()
	p.wantDone.Store(true) // before the look at word: over, having stored it, closes the channel
	w := p.word.Load()
	if isOver(w, gen) {
		p.mu.Unlock()
		return closedChan
	}
	if p.doneGen != gen || p.done == nil {
		p.done, p.doneGen, p.closed = make(chan struct{}), gen, false
	}
	ch := p.done
	hand := split && w == overWord(gen-1) && p.handed != gen // posted: nobody may come to end it
	if hand {
		p.handed = gen
	}
	p.mu.Unlock()
	if hand {
		go p.endNow(gen)
	}
	return ch
}

// closedChan is a channel that is always closed.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// splitRef names a persistent start (p's number gen) begun on the
// segment and not ended when it was taken: a later call of the segment
// ends it first, or waits until it has ended.
type splitRef struct {
	p   *Persistent
	gen uint64
}

// over reports whether the start is over (a later start of p means it
// is).
func (r splitRef) over() bool { return isOver(r.p.word.Load(), r.gen) }

// ready reports whether ending the start would wait for nothing.
func (r splitRef) ready() bool { return r.p.ready(0) }

// settle ends the start in the calling goroutine, where ctx cannot end
// while it waits or it waits for nothing, or waits until another
// goroutine has ended it.
func (r splitRef) settle(ctx context.Context) error {
	for !r.over() {
		if r.p.word.Load() == overWord(r.gen-1) && (ctx.Done() == nil || r.ready()) {
			r.p.endNow(r.gen)
			continue
		}
		select {
		case <-r.p.doneFor(r.gen, true):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
