package comm

import (
	"context"
	"fmt"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/observe"
)

// Counters returns c's call counters (Comm.Profile), made on first use.
func (c *Comm) Counters() *observe.Counters {
	if cs := c.counters.Load(); cs != nil {
		return cs
	}
	return c.makeCounters()
}

func (c *Comm) makeCounters() *observe.Counters {
	c.counters.CompareAndSwap(nil, observe.NewCounters(len(c.group)))
	return c.counters.Load()
}

// Label names c in a timeline: "world", or its context's number, which
// every member derives alike.
func (c *Comm) Label() string {
	return c.label
}

// labelOf names the communicator of context ctx in a timeline (Label).
func labelOf(world bool, ctx uint64) string {
	if world {
		return "world"
	}
	return fmt.Sprintf("comm %08x", uint32(ctx))
}

// Recorder returns the rank's call recorder.
func (c *Comm) Recorder() *observe.Recorder { return c.ep.Obs }

// collOps are the observed names of each collective operation, blocking
// and nonblocking, as the API names them, and the paths over a node
// segment, by collIndex: arrays, not maps, so that a call looks them up
// for the price of a switch.
var collOps, icollOps, segPaths = func() (b, nb [numCollOps]observe.Op, seg [numCollOps]string) {
	names := [numCollOps]string{"Barrier", "Bcast", "Reduce", "Allreduce", "Scatter", "Gather", "Allgather", "Alltoall",
		"Scatterv", "Gatherv", "Allgatherv", "Alltoallv", "ReduceScatterBlock", "ReduceScatter", "Scan", "Exscan"}
	for _, op := range coll.Operations {
		i := collIndex(op)
		if i < 0 {
			panic("comm: no observed name for collective " + string(op))
		}
		b[i] = observe.Register(names[i], observe.CatColl)
		nb[i] = observe.Register("I"+lowerFirst(names[i]), observe.CatColl)
		seg[i] = segmentNames[op]
		collOf[b[i]], collOf[nb[i]] = collFacts{i, rooted(op)}, collFacts{i, rooted(op)}
	}
	return b, nb, seg
}()

// collFacts is what EndColl needs of an observed collective operation,
// by its Op: looking them up from the coll.Operation, a string, would
// cost a switch of string comparisons each.
type collFacts struct {
	index  int  // collIndex
	rooted bool // the call has a root
}

var collOf [observe.MaxOps]collFacts

const numCollOps = 16

// collIndex numbers the collective operations for collOps (-1: none).
func collIndex(op coll.Operation) int {
	switch op {
	case coll.OpBarrier:
		return 0
	case coll.OpBcast:
		return 1
	case coll.OpReduce:
		return 2
	case coll.OpAllreduce:
		return 3
	case coll.OpScatter:
		return 4
	case coll.OpGather:
		return 5
	case coll.OpAllgather:
		return 6
	case coll.OpAlltoall:
		return 7
	case coll.OpScatterv:
		return 8
	case coll.OpGatherv:
		return 9
	case coll.OpAllgatherv:
		return 10
	case coll.OpAlltoallv:
		return 11
	case coll.OpReduceScatterBlock:
		return 12
	case coll.OpReduceScatter:
		return 13
	case coll.OpScan:
		return 14
	case coll.OpExscan:
		return 15
	}
	return -1
}

func lowerFirst(s string) string { return string(s[0]+'a'-'A') + s[1:] }

// CollOp is the observed operation of a collective call of op, blocking or
// not.
func CollOp(op coll.Operation, blocking bool) observe.Op {
	if blocking {
		return collOps[collIndex(op)]
	}
	return icollOps[collIndex(op)]
}

// BeginColl starts observing this rank's collective call of op on c:
// nothing to look up while nothing records.
func (c *Comm) BeginColl(op coll.Operation, blocking bool) observe.Token {
	r := c.ep.Obs
	if r.CountingOnly() { // the default: counting alone, the shortest way
		return c.Counters().Begin(CollOp(op, blocking))
	}
	if r.Active() {
		return r.Begin(CollOp(op, blocking), c)
	}
	return observe.Token{}
}

// EndColl ends the observation t of a collective call (BeginColl's
// operation) on layout l (bytes, root) that ran along alg, chosen by by;
// segment: alg is the node segment's path, looked up only if needed.
// Callers test t.On() first: a call that records nothing then costs that
// test alone.
func (c *Comm) EndColl(ctx context.Context, t observe.Token, l *coll.Layout, segment bool, alg, by string, err error) {
	f := &collOf[t.Op()]
	if segment {
		alg = segPaths[f.index]
	}
	if t.Counted() {
		c.Counters().End(t, int64(l.Bytes), alg, by)
		return
	}
	root := observe.NoRank
	if f.rooted && l.Root >= 0 && l.Root < len(c.group) {
		root = c.group[l.Root]
	}
	c.ep.Obs.End(ctx, t, c, &observe.Call{Op: t.Op(), Bytes: int64(l.Bytes), Peer: observe.NoRank, WorldPeer: observe.NoRank, WorldRoot: root,
		Alg: alg, By: by, Err: err})
}

// rooted reports whether op has a root.
func rooted(op coll.Operation) bool {
	switch op {
	case coll.OpBcast, coll.OpReduce, coll.OpScatter, coll.OpGather, coll.OpScatterv, coll.OpGatherv:
		return true
	}
	return false
}

// Observe makes k end the observation t when it has run.
func (k *Call) Observe(t observe.Token) { k.obs = t }

// Path names the algorithm k runs (or ran) and who chose it.
func (k *Call) Path() (alg, by string) {
	switch {
	case k.team != nil:
		return directNames[k.op], k.by
	case k.seg != nil:
		return segmentNames[k.op], k.by
	case k.plan != nil && k.plan.name != "":
		alg = k.plan.name
	default:
		alg = k.alg.Name()
	}
	if k.drawn {
		return alg, ChosenByLottery
	}
	return alg, k.by
}

// Comm returns the communicator k runs on.
func (k *Call) Comm() *Comm { return k.x.c }

// Op is the observed operation of k's call, nonblocking form for a call
// started to run apart.
func (k *Call) Op() observe.Op { return CollOp(k.op, k.blocking) }
