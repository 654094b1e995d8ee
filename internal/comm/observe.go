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
	c.counters.CompareAndSwap(nil, observe.NewCounters(len(c.group)))
	return c.counters.Load()
}

// Label names c in a timeline: "world", or its context's number, which
// every member derives alike.
func (c *Comm) Label() string {
	if c.world {
		return "world"
	}
	return fmt.Sprintf("comm %08x", uint32(c.ctx))
}

// Recorder returns the rank's call recorder.
func (c *Comm) Recorder() *observe.Recorder { return c.ep.Obs }

// collOps are the observed names of each collective operation, blocking
// and nonblocking, as the API names them.
var collOps, icollOps = func() (map[coll.Operation]observe.Op, map[coll.Operation]observe.Op) {
	names := map[coll.Operation]string{
		coll.OpBarrier: "Barrier", coll.OpBcast: "Bcast", coll.OpReduce: "Reduce", coll.OpAllreduce: "Allreduce",
		coll.OpScatter: "Scatter", coll.OpGather: "Gather", coll.OpAllgather: "Allgather", coll.OpAlltoall: "Alltoall",
		coll.OpScatterv: "Scatterv", coll.OpGatherv: "Gatherv", coll.OpAllgatherv: "Allgatherv", coll.OpAlltoallv: "Alltoallv",
		coll.OpReduceScatterBlock: "ReduceScatterBlock", coll.OpReduceScatter: "ReduceScatter", coll.OpScan: "Scan", coll.OpExscan: "Exscan",
	}
	b, nb := map[coll.Operation]observe.Op{}, map[coll.Operation]observe.Op{}
	for _, op := range coll.Operations {
		n, ok := names[op]
		if !ok {
			panic("comm: no observed name for collective " + string(op))
		}
		b[op] = observe.Register(n, observe.CatColl)
		nb[op] = observe.Register("I"+lowerFirst(n), observe.CatColl)
	}
	return b, nb
}()

func lowerFirst(s string) string { return string(s[0]+'a'-'A') + s[1:] }

// CollOp is the observed operation of a collective call of op, blocking or
// not.
func CollOp(op coll.Operation, blocking bool) observe.Op {
	if blocking {
		return collOps[op]
	}
	return icollOps[op]
}

// EndColl ends the observation of a collective call of op on layout l
// that ran along alg, chosen by by.
func (c *Comm) EndColl(ctx context.Context, t observe.Token, op observe.Op, cop coll.Operation, l coll.Layout, alg, by string, err error) {
	r := c.ep.Obs
	if !r.On(t) {
		return
	}
	root := observe.NoRank
	if rooted(cop) && l.Root >= 0 && l.Root < len(c.group) {
		root = c.group[l.Root]
	}
	r.End(ctx, t, c, observe.Call{Op: op, Bytes: int64(l.Bytes), Peer: observe.NoRank, WorldPeer: observe.NoRank, WorldRoot: root,
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

// Observe makes k end the observation t of op when it has run.
func (k *Call) Observe(t observe.Token, op observe.Op) {
	k.obs, k.obsOp = t, op
}

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

// SegmentName names the path of op's calls that a node segment carries.
func SegmentName(op coll.Operation) string { return segmentNames[op] }

// Comm returns the communicator k runs on.
func (k *Call) Comm() *Comm { return k.x.c }

// Op is the observed operation of k's call, nonblocking form for a call
// started to run apart.
func (k *Call) Op() observe.Op { return CollOp(k.op, k.blocking) }
