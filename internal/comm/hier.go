package comm

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/nodecoll"
)

// A communicator whose ranks span nodes runs the hierarchical algorithms
// (coll.Hierarchical) as calls of two communicators of its own, made from
// the job's node map without a message: its members on this rank's node,
// and the lowest-ranked member of each node (the leaders). Each phase of a
// call is a call of one of them, with the algorithm that communicator's
// table chooses: on a node, the node segment.

// hierSalt separates the communicators of a hierarchy from those Dup and
// Split derive.
const hierSalt = 0x41E2A2C4

// hierarchy is a communicator's split by node.
type hierarchy struct {
	node     *Comm // this rank's node's members, in the communicator's order
	leaders  *Comm // each node's lowest member, in that order; nil on the other ranks
	nodeOf   []int // each rank's node, numbered by its lowest member's rank
	nodeRank []int // each rank's rank in its node's communicator
	leaderOf []int // each node's leader (its lowest rank)
	// scratch is a leader's buffer for its node's partial result, used
	// by one call at a time (busy); a concurrent call allocates.
	scratch []byte
	busy    atomic.Bool
}

// hierarchyOf returns c's hierarchy, made on first use; the same on every
// member, computed apart by each.
func (c *Comm) hierarchyOf() *hierarchy {
	if h := c.hier.Load(); h != nil {
		return h
	}
	n := len(c.group)
	h := &hierarchy{nodeOf: make([]int, n), nodeRank: make([]int, n)}
	index := map[int]int{} // the endpoint's node id → node number here
	var size []int         // members per node so far
	for r, w := range c.group {
		id := c.ep.NodeOf(w)
		i, ok := index[id]
		if !ok {
			i = len(h.leaderOf)
			index[id] = i
			h.leaderOf = append(h.leaderOf, r)
			size = append(size, 0)
		}
		h.nodeOf[r], h.nodeRank[r] = i, size[i]
		size[i]++
	}
	mine := h.nodeOf[c.rank]
	var group []int
	for r, w := range c.group {
		if h.nodeOf[r] == mine {
			group = append(group, w)
		}
	}
	h.node = c.child(mix(c.ctx, hierSalt, uint64(mine)+1), group, h.nodeRank[c.rank])
	if h.leaderOf[mine] == c.rank {
		leaders := make([]int, len(h.leaderOf))
		for i, r := range h.leaderOf {
			leaders[i] = c.group[r]
		}
		h.leaders = c.child(mix(c.ctx, hierSalt, 0), leaders, mine)
	}
	if !c.hier.CompareAndSwap(nil, h) {
		return c.hier.Load() // another goroutine of this rank made it first: the same
	}
	return h
}

// spansNodes reports whether c's ranks lie on several nodes and some node
// holds more than one of them: where a hierarchical algorithm sends fewer
// messages between nodes than one that ignores them.
func (c *Comm) spansNodes() bool {
	return c.spans.get(func() bool {
		nodes := map[int]bool{}
		for _, w := range c.group {
			nodes[c.ep.NodeOf(w)] = true
		}
		return len(nodes) > 1 && len(nodes) < len(c.group)
	})
}

// hierarchical returns op's hierarchical algorithm when the table would
// choose it for a call of bytes: on a communicator spanning nodes
// (spansNodes), where the node phases go through the node segment (a slot
// holds the vector), for a reduction only a commutative one, unless the
// lottery chooses every call (under "learn" it runs, as the segment does:
// there it beat every family that ignores the nodes, and a draw's
// agreement would cost as much as such a call). Beyond a slot the node phases pass messages, and
// families that ignore the nodes won (4 ranks on two nodes of one
// processor each: hierarchical Allreduce 1.3× the best of them at 4 KiB,
// 1.8× at 16 KiB, 4× at 1 MiB; Bcast 2× at 4 KiB).
func (c *Comm) hierarchical(op coll.Operation, bytes int, commutative bool) (coll.Algorithm, bool) {
	a, ok := coll.HierarchicalAlgorithm(op)
	return a, ok && !c.ep.Cfg.DrawsEverything() && c.hierarchyPays(op, bytes, commutative)
}

// hierarchyPays reports whether a hierarchical call of op on bytes can
// beat the families that ignore the nodes (hierarchical): the ranks span
// nodes, and the node phases go through the node segment.
func (c *Comm) hierarchyPays(op coll.Operation, bytes int, commutative bool) bool {
	return bytes <= nodecoll.DefaultLayout.MaxData() && (commutative || !op.Reduces()) && c.spansNodes()
}

// close closes the hierarchy's communicators.
func (h *hierarchy) close() {
	h.node.Close()
	if h.leaders != nil {
		h.leaders.Close()
	}
}

// hierCall is a hierarchical call's phases, prepared with it in program
// order (a nonblocking call runs them later, and every rank must number
// its node's and its leaders' calls alike): each a call of the node's or
// the leaders' communicator, or nil where this rank takes no part.
type hierCall struct {
	h       *hierarchy
	phases  [3]*Call
	scratch []byte    // the hierarchy's, to hand back (nil: allocated, or none)
	outer   outerCall // what its phases watch (run)
}

// prepareHier prepares the phases of a hierarchical call of op on l.
func (c *Comm) prepareHier(op coll.Operation, l coll.Layout, in, out []byte, red coll.Reducer, commutative bool) (*hierCall, error) {
	h := c.hierarchyOf()
	hc := &hierCall{h: h}
	me := c.rank
	node, lead := h.nodeOf[me], h.leaders
	alone := h.node.Size() == 1
	root := l.Root
	rootNode := h.nodeOf[root]
	phase := 0
	add := func(on *Comm, op coll.Operation, root int, in, out []byte) error {
		if on == nil || on.Size() == 1 && op != coll.OpReduce && op != coll.OpAllreduce {
			return nil // nothing to meet: a lone rank's Bcast and Barrier do nothing
		}
		k, err := on.Prepare(op, coll.Layout{Root: root, Bytes: l.Bytes, Elem: l.Elem}, in, out, red, commutative, Options{})
		if err != nil {
			return err
		}
		hc.phases[phase] = k
		phase++
		return nil
	}
	var err error
	switch op {
	case coll.OpBarrier:
		err = add(h.node, op, 0, nil, nil)
		if err == nil {
			err = add(lead, op, 0, nil, nil)
		}
		if err == nil {
			err = add(h.node, op, 0, nil, nil)
		}
	case coll.OpBcast:
		if node == rootNode {
			err = add(h.node, op, h.nodeRank[root], out, out)
			if err == nil {
				err = add(lead, op, rootNode, out, out)
			}
		} else {
			err = add(lead, op, rootNode, out, out)
			if err == nil {
				err = add(h.node, op, 0, out, out)
			}
		}
	case coll.OpAllreduce:
		if alone {
			err = add(lead, op, 0, in, out)
			break
		}
		part := hc.partial(lead != nil, l.Bytes)
		err = add(h.node, coll.OpReduce, 0, in, part)
		if err == nil {
			err = add(lead, op, 0, part, out)
		}
		if err == nil {
			err = add(h.node, coll.OpBcast, 0, out, out)
		}
	case coll.OpReduce:
		switch {
		case alone:
			err = add(lead, op, rootNode, in, out)
		case node == rootNode:
			// The other nodes' results reach this node's leader first; it
			// adds them to its own contribution in its node's reduce.
			mine := in
			if lead != nil {
				mine = hc.partial(true, l.Bytes)
				err = add(lead, op, rootNode, in, mine)
			}
			if err == nil {
				err = add(h.node, op, h.nodeRank[root], mine, out)
			}
		default:
			part := hc.partial(lead != nil, l.Bytes)
			err = add(h.node, op, 0, in, part)
			if err == nil {
				err = add(lead, op, rootNode, part, nil)
			}
		}
	default:
		err = fmt.Errorf("commtune: %s has no hierarchical algorithm", op)
	}
	if err != nil {
		hc.release()
		return nil, err
	}
	return hc, nil
}

// partial returns a leader's buffer for its node's partial result; nil
// for a rank that leads nothing.
func (hc *hierCall) partial(leader bool, n int) []byte {
	if !leader {
		return nil
	}
	h := hc.h
	if h.busy.CompareAndSwap(false, true) {
		if cap(h.scratch) < n {
			h.scratch = make([]byte, n)
		}
		hc.scratch = h.scratch[:n]
		return hc.scratch
	}
	return make([]byte, n)
}

// release hands back the phases not run and the scratch buffer.
func (hc *hierCall) release() {
	for i, k := range hc.phases {
		if k != nil {
			k.release()
			hc.phases[i] = nil
		}
	}
	if hc.scratch != nil {
		hc.scratch = nil
		hc.h.busy.Store(false)
	}
}

// runHier runs k's phases in turn. A phase that fails ends this rank's
// later ones at once, telling their peers, so that no rank of another node
// waits for it.
func (k *Call) runHier(ctx context.Context) error {
	c, hc := k.x.c, k.hier
	defer hc.release()
	err := hc.run(ctx, k, namedSignature(k.op, k.alg.Name(), k.layout), controlSignatureDirect, nil, c.beginDirect())
	c.endDirect(k.seq)
	if err != nil {
		c.leaveCalls(k.seq, err)
		return fmt.Errorf("commtune: %s (%s): %w", k.op, k.alg.Name(), err)
	}
	if k.Post != nil {
		k.Post()
	}
	if k.choice != nil {
		k.choice(Choice{Algorithm: k.alg.Name(), By: k.by})
	}
	return nil
}

// run runs the phases of k, a hierarchical call, in turn; with err, a
// failure before the first, it runs none and fails them all. A phase that
// fails fails those after it. sig, kind and st are what a waiting phase
// tells and watches of k (outerCall).
func (hc *hierCall) run(ctx context.Context, k *Call, sig Sig, kind byte, st *CallState, err error) error {
	o := &hc.outer
	o.c, o.seq, o.op, o.name, o.layout = k.x.c, k.seq, k.op, k.alg.Name(), k.layout
	o.sig, o.kind, o.st = sig, kind, st
	hc.h.node.outer.Store(o)
	if hc.h.leaders != nil {
		hc.h.leaders.outer.Store(o)
	}
	for i, p := range hc.phases {
		if p == nil {
			continue
		}
		hc.phases[i] = nil
		if err != nil {
			p.failUnrun(ctx, err)
			continue
		}
		err = p.Run(ctx, k.blocking)
	}
	return err
}

// runDrawn runs k, a blocking call for which the lottery drew the
// hierarchical algorithm: its phases are prepared now, in program order
// still. The call passes messages as far as its ranks know (sig, the
// lottery's signature, which they agree on): its phases watch its state.
func (k *Call) runDrawn(ctx context.Context, sig Sig) error {
	hc, err := k.x.c.prepareHier(k.op, k.layout, k.in, k.out, k.red, k.commutative)
	if err != nil {
		return err
	}
	defer hc.release()
	return hc.run(ctx, k, sig, controlSignature, &k.state, nil)
}

// failUnrun ends a prepared call that will not run because an earlier
// phase failed: its communicator is out of step from it on, its peers are
// told why, and running it fails at once (serving its place among the
// segment's calls, marking this rank's part for the peers waiting on it).
func (k *Call) failUnrun(ctx context.Context, err error) {
	c := k.x.c
	co := c.coord()
	co.mu.Lock()
	c.breakLocked(k.seq-1, err)
	co.mu.Unlock()
	c.tellWhy(k.seq, err)
	k.Run(ctx, false)
}

// preparedHier makes a hierarchical call.
func (c *Comm) preparedHier(op coll.Operation, alg coll.Algorithm, l coll.Layout, in, out []byte, red coll.Reducer, commutative bool, o Options, by string) (*Call, error) {
	if in != nil && out != nil && Overlap(in, out) {
		in = append([]byte(nil), in...) // a phase writes the output before the last reads the input
	}
	hc, err := c.prepareHier(op, l, in, out, red, commutative)
	if err != nil {
		return nil, err
	}
	k := callPool.Get().(*Call)
	k.op, k.alg, k.plan, k.sched, k.in, k.out, k.red, k.x.c = op, alg, &directPlan, &directPlan.sched, in, out, red, c
	k.layout, k.commutative, k.choice, k.by = l, commutative, o.Choice, by
	k.hier = hc
	k.seq = c.nextCollCall() // in step with ranks that pass messages, should one disagree
	return k, nil
}

// outerCall is the hierarchical call of a communicator whose phases its
// node's and leaders' communicators run: what a phase that waits looks at
// besides its own peers (watchOuter).
type outerCall struct {
	c      *Comm
	seq    uint64
	op     coll.Operation
	name   string
	layout coll.Layout
	// sig is the call's signature as its ranks know it, which this rank
	// tells them, as a note of kind; st is the call's state where it
	// passes messages as far as its ranks know (a lottery's draw), nil
	// where it runs as a direct call (notes of it wait for watchDirect).
	sig  Sig
	kind byte
	st   *CallState
	told atomic.Bool
}

// watchOuter is what a phase of a hierarchical call that waits does on
// the communicator of the call, from collLook on, every collRewatch: a
// rank that runs another algorithm there passes messages, or tells its
// signature, and waits for this rank's messages, which never come. It
// returns why the phase must end, if it must; it tells the ranks of the
// call this rank's signature once.
func (c *Comm) watchOuter() error {
	o := c.outer.Load()
	if o == nil {
		return nil
	}
	p := o.c
	if o.st != nil {
		// A peer's note of the call fails its state (apply).
		co := p.coord()
		if co.arrived.Load() != co.drained.Load() {
			p.drainNotes()
		}
		co.mu.Lock()
		failed := o.st.failed
		co.mu.Unlock()
		if failed != nil {
			return failed
		}
	} else {
		if err := p.passesMessages(o.seq); err != nil {
			return err
		}
		p.watchDirect(o.seq, o.op, o.name, o.layout, -1, false, nil)
	}
	if !o.told.Swap(true) {
		p.tellPeers(o.kind, o.seq, o.sig.hash, o.sig.describe())
	}
	if p.coord().brokenFlag.Load() {
		return p.brokenErr()
	}
	return nil
}
