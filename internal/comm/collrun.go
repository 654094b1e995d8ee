package comm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/commtune/commtune/internal/nodecoll"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/observe"
)

// Options are one collective call's options (commtune.CollOption).
type Options struct {
	Algorithm string       // the algorithm to run; "" lets the table (or the lottery) choose
	Choice    func(Choice) // told, when the call succeeds, what ran and who chose it
}

// Choice is how a collective call chose its algorithm
// (commtune.CollChoice).
type Choice struct {
	Algorithm string // the algorithm that ran
	By        string // ChosenByOption, ChosenByEnv, ChosenByTable, ChosenBySampled or ChosenByLottery
	Leader    string // under the lottery, on rank 0: the candidate holding most tickets
}

// Who chose a call's algorithm (Choice.By).
const (
	ChosenByOption  = "option"
	ChosenByEnv     = "environment"
	ChosenByTable   = "table"
	ChosenBySampled = "sampled"
	ChosenByLottery = "lottery"
)

// Collective operations use their communicator's collective context. A
// call's messages carry a tag made of the call's number (calls are
// numbered in the order each rank makes them, which MPI requires to be the
// same on every rank) and of its signature (collcheck.go): the messages
// of consecutive calls never match each other's receives, nor, but by a
// chance of 2^-callSigBits, those of a rank that disagrees on the call (another
// algorithm, root or size). Without the signature, a rank running another
// algorithm could send a message of just the size a receive expects, and
// the receiver finish with its data; now it waits, and the signature watch
// ends the call on every rank that needs that message.
//
// The number's low callSeqBits bits go in the tag: messages of calls that
// far apart may match each other's receives only if both calls are in
// flight on one rank at once, which takes as many nonblocking collectives
// started and not finished.
const (
	tagCallFirst = 1 << 30 // below: control notes, internal exchanges, the lottery's keys
	callSeqBits  = 16
	callSigBits  = 30 - callSeqBits
)

// callTag is the tag of call seq's messages under signature sig.
func callTag(seq uint64, sig Sig) int {
	return tagCallFirst | int(sig.hash>>(64-callSigBits))<<callSeqBits | int(seq&(1<<callSeqBits-1))
}

// sameCall reports whether two call tags carry the same call number.
func sameCall(a, b int) bool { return (a^b)&(1<<callSeqBits-1) == 0 }

// nextCollCall numbers a new collective call.
func (c *Comm) nextCollCall() uint64 { return c.collSeq.Add(1) }

// Algorithm chooses op's algorithm for a call: the caller's option, else
// the configuration's forced one (COMMTUNE_COLL_<OP>), else the profile's
// sampled decision table where it has the call, else the fixed decision
// table. A forced algorithm that cannot reduce a non-commutative
// operation in rank order yields to the table; an option does not.
// It reports whether the choice was the table's (auto): a selector may
// then choose instead.
func (c *Comm) Algorithm(op coll.Operation, bytes int, commutative bool, o Options) (a coll.Algorithm, auto bool, err error) {
	a, _, auto, err = c.algorithm(op, bytes, commutative, o)
	return a, auto, err
}

// algorithm is Algorithm, saying who chose: ChosenByOption, ChosenByEnv,
// ChosenBySampled (the profile's sampled table) or ChosenByTable (the
// fixed one, or a path the ranks' placement decides).
func (c *Comm) algorithm(op coll.Operation, bytes int, commutative bool, o Options) (a coll.Algorithm, by string, auto bool, err error) {
	if name := o.Algorithm; name != "" {
		a, err := coll.Parse(op, name)
		if err != nil {
			return a, ChosenByOption, false, fmt.Errorf("commtune: %w", err)
		}
		if !commutative && a.Commutative() {
			return a, ChosenByOption, false, fmt.Errorf("commtune: %s: %w", a.Name(), coll.ErrNotCommutative)
		}
		if a.IsDirect() && c.teamOf() == nil {
			return a, ChosenByOption, false, fmt.Errorf("commtune: %s reads the other ranks' buffers in place: only goroutine ranks of one process (Local) can run it", a.Name())
		}
		return a, ChosenByOption, false, nil
	}
	if a, ok := c.ep.Cfg.Forced(op); ok && (commutative || !a.Commutative()) && (!a.IsDirect() || c.teamOf() != nil) {
		return a, ChosenByEnv, false, nil
	}
	if a, ok := c.direct(op); ok {
		// Ranks sharing this process read each other's buffers: nothing
		// passing messages comes near.
		return a, ChosenByTable, false, nil
	}
	if a, ok := c.hierarchical(op, bytes, commutative); ok {
		// Ranks on several nodes: the fewest messages between them.
		return a, ChosenByTable, false, nil
	}
	if t := c.sampledTable(); t != nil {
		if a, _, ok := t.Decide(op, len(c.group), bytes, commutative); ok {
			a.Pull = a.Pull && c.pullsSampled(bytes)
			return a, ChosenBySampled, true, nil
		}
	}
	pull := c.ep.CollPull.Pulls(int64(bytes)) && pullsOp(op, bytes) && c.readsPeers()
	a = coll.DecidePulled(op, len(c.group), bytes, commutative, pull)
	a.Pull = pull && a.Pulls()
	return a, ChosenByTable, true, nil
}

// sampledTable returns the profile's sampled decision table where it
// applies to c: every member reaches the others through shared memory, as
// on the node the table was sampled on; nil elsewhere.
func (c *Comm) sampledTable() *coll.Table {
	if c.ep.CollTable == nil {
		return nil
	}
	on := c.onNode.get(func() bool {
		for _, w := range c.group {
			if w != c.ep.Eng.Rank() && c.ep.Transport(w) != "shm" {
				return false
			}
		}
		return true
	})
	if !on {
		return nil
	}
	return c.ep.CollTable
}

// pullsSampled reports whether an algorithm the sampled table has pulled
// pulls on c at bytes: unless the ranks cannot read each other or the
// configuration (COMMTUNE_COLL_PULL) says not at this size.
func (c *Comm) pullsSampled(bytes int) bool {
	return c.readsPeers() && (c.ep.Cfg.CollPull == 0 || c.ep.CollPull.Pulls(int64(bytes)))
}

// reducePullMin is the smallest vector a reduction pulls where pulling
// pays: below it the receiver, which copies and reduces on its own
// processor, lost (4 ranks on 2 processors: Rabenseifner pulled 1.2–1.7×
// the time of the ring one from 16K to 256K, 0.89× at 1M). Reduce never
// pulls: its root would read every child's vector alone, and not pulling
// took 0.73× the time at 1M (three paired runs of 4 ranks on 2
// processors), 0.85× at 4M, and 0.88× at 1M on 8 ranks.
const reducePullMin = 1 << 20

// pullsOp reports whether the table's algorithm for op pulls its messages
// at bytes, where the job's pull range takes bytes: the operations that
// only move data do, reductions from reducePullMin, Reduce never.
func pullsOp(op coll.Operation, bytes int) bool {
	switch {
	case op == coll.OpReduce:
		return false
	case op.Reduces():
		return bytes >= reducePullMin
	}
	return true
}

// readsPeers reports whether some member of c can read another's memory
// in place (shared memory with CMA), so that pulled messages are worth
// asking for; it asks the rails once.
func (c *Comm) readsPeers() bool {
	return c.pullPeers.get(func() bool {
		for _, w := range c.group {
			if w != c.ep.Eng.Rank() && c.ep.Sched.CanPull(w) {
				return true
			}
		}
		return false
	})
}

// direct returns op's direct algorithm when the table would choose it: on
// a communicator whose ranks share this process, unless the lottery
// chooses (it draws among the algorithms that pass messages).
func (c *Comm) direct(op coll.Operation) (coll.Algorithm, bool) {
	a, ok := coll.DirectAlgorithm(op)
	return a, ok && !c.ep.Cfg.DrawsEverything() && c.teamOf() != nil
}

// Call is one collective call, ready to run (Prepare). Calls come from a pool
// and go back to it when they end, with their exchanger and call state.
type Call struct {
	op    coll.Operation
	alg   coll.Algorithm
	plan  *plan
	sched *coll.Schedule
	in    []byte
	out   []byte
	red   coll.Reducer
	Post  func() // after a successful run (commtune's loneLogical)
	seq   uint64
	x     exchanger
	state CallState
	// auto: the algorithm is the table's, so a selector may choose
	// instead, on blocking calls (runNow); layout and commutative are what
	// it needs to.
	auto, blocking bool
	layout         coll.Layout
	commutative    bool
	choice         func(Choice) // Options.Choice
	by             string       // who chose alg (Choice.By)
	// team and ticket: a direct algorithm's team member, and the call's
	// place among the member's calls.
	team   *teamMember
	ticket uint64
	// seg: the node segment that carries the call (segment.go); its
	// number among the segment's is ticket.
	seg *segment
	// home: the segment whose own Call this is, to go back to it.
	home *segment
	// hier: the phases of a hierarchical call (hier.go).
	hier *hierCall
	// after: a persistent start's call the segment carries before k,
	// begun and not yet ended when k was prepared: k ends it first, or
	// waits until it has ended (persistent.go).
	after splitRef
	// persistent: the persistent call whose template this Call is
	// (Persist); such a Call never runs.
	persistent *Persistent
	// obs: the observation of the program's call that Run ends
	// (Observe); drawn: the lottery chose the algorithm that ran.
	obs   observe.Token
	drawn bool
}

var callPool = sync.Pool{New: func() any { return new(Call) }}

// release hands k back to the pool, dropping what it refers to.
func (k *Call) release() {
	if s := k.home; s != nil {
		*k = Call{}
		s.callFree.Store(true)
		return
	}
	reqs, runner := k.x.reqs[:0], k.x.runner
	*k = Call{}
	k.x.reqs, k.x.runner = reqs, runner
	callPool.Put(k)
}

// plan is what a call's schedule and signature depend on, kept per
// communicator: ranks call the same operations at the same sizes again and
// again, and building a schedule allocates.
type plan struct {
	sched coll.Schedule
	sig   Sig
	name  string  // the algorithm's name, for Choice without building it per call
	key   planKey // what it was built for (Comm.lastPlan)
	// counts and displs are copies of the layout's per-rank counts and
	// displacements, which key holds by their hash alone.
	counts, displs []int
	// auto: the decision table chose key.alg for this call (Prepare
	// reuses the last such plan without deciding again); by: which table
	// (ChosenByTable, ChosenBySampled), set before auto.
	auto atomic.Bool
	by   string
}

// planKey names a plan. Layouts with per-peer counts on both sides
// (Alltoallv) are not kept; those with per-rank counts and displacements
// (the other v-variants, ReduceScatter) are, by a hash of them.
type planKey struct {
	alg               coll.Algorithm
	root, bytes, elem int
	commutative       bool
	counts            uint64 // countsHash of the layout's Counts and Displs
}

// countsHash is the FNV-1a hash of counts and displs, 0 when both are
// nil.
func countsHash(counts, displs []int) uint64 {
	if counts == nil && displs == nil {
		return 0
	}
	h := uint64(fnvBasis)
	for _, s := range [2][]int{counts, displs} {
		for _, v := range s {
			for i := 0; i < 8; i++ {
				h = (h ^ uint64(byte(v>>(8*i)))) * fnvPrime
			}
		}
		h = (h ^ 0xff) * fnvPrime // between the two lists
	}
	return h
}

// fits reports whether p was built for the counts and displacements of l.
func (p *plan) fits(l coll.Layout) bool {
	return slices.Equal(p.counts, l.Counts) && slices.Equal(p.displs, l.Displs)
}

// maxPlans bounds a communicator's plans; when full it starts again.
const maxPlans = 256

// plan returns the schedule and signature of alg on layout l, from the
// communicator's plans when l has no per-rank counts.
func (c *Comm) plan(op coll.Operation, alg coll.Algorithm, l coll.Layout, commutative bool) (*plan, error) {
	cacheable := l.SendCounts == nil && l.RecvCounts == nil
	key := planKey{alg: alg, root: l.Root, bytes: l.Bytes, elem: l.Elem, commutative: commutative}
	if cacheable {
		key.counts = countsHash(l.Counts, l.Displs)
		// Most calls repeat the last one: no lock, no map lookup.
		if p := c.lastPlan.Load(); p != nil && p.key == key && p.fits(l) {
			return p, nil
		}
		c.plansMu.Lock()
		p := c.plans[key]
		c.plansMu.Unlock()
		if p != nil && p.fits(l) {
			c.lastPlan.Store(p)
			return p, nil
		}
	}
	s, err := alg.Build(l, commutative)
	if err != nil {
		return nil, fmt.Errorf("commtune: %w", err)
	}
	p := &plan{sched: s, sig: signature(op, alg, l), key: key, counts: slices.Clone(l.Counts), displs: slices.Clone(l.Displs), name: alg.Name()}
	if cacheable {
		c.lastPlan.Store(p)
		c.plansMu.Lock()
		if c.plans == nil || len(c.plans) >= maxPlans {
			c.plans = make(map[planKey]*plan)
		}
		c.plans[key] = p
		c.plansMu.Unlock()
	}
	return p, nil
}

// Prepare checks a call and fixes everything about it before any message:
// its algorithm, its schedule and its tag. l describes it (the decision
// table looks at l.Bytes); in and out are this rank's buffers.
func (c *Comm) Prepare(op coll.Operation, l coll.Layout, in, out []byte, red coll.Reducer, commutative bool, o Options) (*Call, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	l.Size, l.Rank = len(c.group), c.rank
	if named := isSegmentAlgorithm(op, o.Algorithm); o.Algorithm == "" || named {
		if s := c.segmentFor(op, l, named); s != nil {
			return c.preparedSegment(s, op, l, in, out, red, commutative, o), nil
		}
		if named {
			return nil, fmt.Errorf("commtune: %s runs only on ranks of one node (processes reaching each other through shared memory, or goroutine ranks), %d to %d of them, each giving at most %d bytes",
				segmentNames[op], 2, segmentMaxRanks, nodecoll.DefaultLayout.MaxData())
		}
	}
	if a, ok := c.direct(op); ok && o.Algorithm == "" {
		if _, forced := c.ep.Cfg.Forced(op); !forced {
			// No schedule to plan: the call runs over the team.
			return c.prepared(op, a, &directPlan, l, in, out, red, commutative, o, false, ChosenByTable), nil
		}
	}
	if a, ok := c.hierarchical(op, l.Bytes, commutative); ok && o.Algorithm == "" {
		if _, forced := c.ep.Cfg.Forced(op); !forced {
			return c.preparedHier(op, a, l, in, out, red, commutative, o, ChosenByTable)
		}
	}
	if p := c.lastPlan.Load(); p != nil && o.Algorithm == "" && p.repeats(op, l, commutative) {
		if _, forced := c.ep.Cfg.Forced(op); !forced {
			// The table's choice for the same call as the last one: the
			// same plan, without deciding again.
			return c.prepared(op, p.key.alg, p, l, in, out, red, commutative, o, true, p.by), nil
		}
	}
	alg, by, auto, err := c.algorithm(op, l.Bytes, commutative, o)
	if err != nil {
		return nil, err
	}
	if alg.IsHierarchical() {
		return c.preparedHier(op, alg, l, in, out, red, commutative, o, by)
	}
	p, err := c.plan(op, alg, l, commutative)
	if err != nil {
		return nil, err
	}
	if auto && !p.auto.Load() {
		p.by = by
		p.auto.Store(true)
	}
	return c.prepared(op, alg, p, l, in, out, red, commutative, o, auto, by), nil
}

// prepared makes the call Prepare decided on.
func (c *Comm) prepared(op coll.Operation, alg coll.Algorithm, p *plan, l coll.Layout, in, out []byte, red coll.Reducer,
	commutative bool, o Options, auto bool, by string) *Call {
	if in != nil && out != nil && Overlap(in, out) {
		// In place (send and receive buffers share memory): schedules
		// read the input after writing the output.
		in = append([]byte(nil), in...)
	}
	k := callPool.Get().(*Call)
	if alg.IsDirect() {
		// Direct calls number themselves on the team: they pass no message.
		k.op, k.alg, k.plan, k.sched, k.in, k.out, k.red, k.x.c = op, alg, p, &p.sched, in, out, red, c
		k.layout, k.commutative, k.choice, k.by = l, commutative, o.Choice, by
		k.team = c.teamOf()
		k.ticket = k.team.tickets.Add(1)
		k.seq = c.nextCollCall() // in step with ranks that pass messages, should one disagree
		return k
	}
	k.op, k.alg, k.plan, k.sched, k.in, k.out, k.red, k.seq = op, alg, p, &p.sched, in, out, red, c.nextCollCall()
	k.x.c = c
	k.auto, k.layout, k.commutative = auto, l, commutative
	k.choice, k.by = o.Choice, by
	return k
}

// repeats reports whether p is the table's plan for a call of op on l:
// the decision table chose p's algorithm for the same size, root, element
// and commutativity (a communicator's size does not change). Only the
// table's own choices are marked so (auto).
func (p *plan) repeats(op coll.Operation, l coll.Layout, commutative bool) bool {
	return p.auto.Load() && p.key.alg.Op == op && p.key.bytes == l.Bytes && p.key.root == l.Root &&
		p.key.elem == l.Elem && p.key.commutative == commutative &&
		l.Counts == nil && l.SendCounts == nil && l.RecvCounts == nil
}

func (k *Call) run(ctx context.Context) error {
	c := k.x.c
	if k.team != nil {
		return k.runDirect(ctx)
	}
	if k.seg != nil {
		return k.runSegment(ctx)
	}
	if k.hier != nil {
		return k.runHier(ctx)
	}
	k.x.call = &k.state
	sel := k.selection()
	k.drawn = sel != nil
	sig := k.plan.sig
	if sel != nil {
		// Ranks learn the algorithm from rank 0's draw: they agree on the
		// call, not yet on how it runs.
		sig = namedSignature(k.op, sel.sigName, k.layout)
	}
	k.x.tag = callTag(k.seq, sig)
	c.beginCall(&k.state, k.seq, sig)
	defer c.endCall(k.seq)
	err := c.watchNow(k.x.call) // a peer may have said already it calls something else
	agreed := sel == nil        // on the algorithm the call runs
	if err == nil && sel != nil {
		err = k.choose(ctx, sel)
		agreed = err == nil
	}
	if err == nil {
		var t0 time.Time
		if sel != nil {
			t0 = time.Now()
		}
		if k.alg.IsHierarchical() {
			err = k.runDrawn(ctx, sig)
		} else {
			err = k.x.runner.Run(ctx, &k.x, k.sched, k.in, k.out, k.red)
		}
		switch {
		case sel == nil || err != nil:
		case sel.settle:
			sel.settle = false
		default:
			sel.timed(time.Since(t0))
		}
		if sel != nil && mismatched(err) {
			// Ranks that disagree on how to choose run different
			// algorithms, whose messages then fail to match.
			err = fmt.Errorf("%w (the lottery chose this call's algorithm: do all ranks set %s alike?)", err, config.EnvCollSelect)
		}
	}
	if err != nil {
		c.abandon(&k.state, err) // the others may wait for this rank: end their wait
		name := k.alg.Name()
		if !agreed {
			name = sel.sigName
		}
		return fmt.Errorf("commtune: %s (%s): %w", k.op, name, err)
	}
	if k.Post != nil {
		k.Post()
	}
	if k.choice != nil {
		ch := Choice{Algorithm: k.plan.name, By: k.by}
		if ch.Algorithm == "" {
			ch.Algorithm = k.alg.Name()
		}
		if sel != nil {
			ch.By = ChosenByLottery
			if c.rank == 0 {
				ch.Leader, _ = c.ep.Lottery.Best(sel.key, sel.names)
			}
		}
		k.choice(ch)
	}
	return nil
}

// runDirect runs a direct algorithm over the team.
func (k *Call) runDirect(ctx context.Context) error {
	if err := k.team.run(ctx, k); err != nil {
		return fmt.Errorf("commtune: %s (%s): %w", k.op, k.alg.Name(), err)
	}
	if k.Post != nil {
		k.Post()
	}
	if k.choice != nil {
		k.choice(Choice{Algorithm: directNames[k.op], By: k.by})
	}
	return nil
}

// directPlan is the plan of every direct call: it has no schedule.
var directPlan plan

// directNames names each operation's direct algorithm, made once: a
// name is built anew by each Algorithm.Name.
var directNames = func() map[coll.Operation]string {
	m := map[coll.Operation]string{}
	for _, op := range coll.Operations {
		if a, ok := coll.DirectAlgorithm(op); ok {
			m[op] = a.Name()
		}
	}
	return m
}()

// Run runs k and hands it back to the pool; blocking says whether the
// caller waits for it (a selector draws only for blocking calls).
func (k *Call) Run(ctx context.Context, blocking bool) error {
	k.blocking = blocking
	c := k.x.c
	c.makeSegment(ctx, k.seq)
	err := k.run(ctx)
	if k.obs.On() {
		alg, by := k.Path()
		c.EndColl(ctx, k.obs, &k.layout, false, alg, by, err)
	}
	k.release()
	return err
}

// Overlap reports whether a and b share memory.
func Overlap(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}

// exchanger carries out a schedule's rounds over c's point-to-point
// engine (coll.Exchanger).
type exchanger struct {
	c      *Comm
	tag    int
	reqs   []*core.Request
	call   *CallState
	runner coll.Runner
}

func (x *exchanger) Exchange(ctx context.Context, recvs, sends []coll.Msg) error {
	c := x.c
	reqs := x.reqs[:0]
	var errs []error
	for i := 0; i < len(recvs)+len(sends); i++ {
		var r *core.Request
		var err error
		if i < len(recvs) {
			r, err = c.irecvTemp(recvs[i].Buf, recvs[i].Peer, x.tag, c.collCtx)
		} else {
			m := sends[i-len(recvs)]
			r, err = c.isendTemp(m.Buf, m.Peer, x.tag, c.collCtx, m.Pull)
		}
		if err != nil {
			errs = append(errs, err)
			break
		}
		reqs = append(reqs, r)
	}
	failed := errs != nil // once one request fails, the rest are cancelled
	if failed {
		c.abandon(x.call, errs[0])
	}
	for i, r := range reqs {
		if failed {
			r.Cancel()
		}
		st, err := c.waitCall(ctx, x.call, r, reqs[i+1:])
		if err == nil && i < len(recvs) && st.Count != len(recvs[i].Buf) {
			err = fmt.Errorf("%w: %d bytes from rank %d where %d were expected (do all ranks pass the same sizes?)",
				core.ErrSizeMismatch, st.Count, recvs[i].Peer, len(recvs[i].Buf))
		}
		if err != nil && (!failed || !errors.Is(err, core.ErrCanceled) && !reported(errs, err)) {
			if !failed {
				// Say why this rank leaves before withdrawing the rest:
				// a peer whose receive sees a withdrawn send then has
				// the reason already.
				err = c.explain(x.call, err)
				c.abandon(x.call, err)
			}
			errs = append(errs, err)
			failed = true
		}
		c.ep.Eng.Release(r)
	}
	clear(reqs)
	x.reqs = reqs[:0]
	return errors.Join(errs...)
}

// reported reports whether errs has an error saying what err says: a lost
// peer fails every request of a round with it, and one says it.
func reported(errs []error, err error) bool {
	for _, e := range errs {
		if e.Error() == err.Error() {
			return true
		}
	}
	return false
}
