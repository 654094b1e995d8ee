package nodecoll

import "fmt"

// A call may also be made in two parts, for a request that starts it and
// ends it later (a persistent collective's Start and Wait): Post begins it
// and publishes what this rank gives, without waiting for anything; Finish
// reads what this rank needs of the others. The peers need nothing more of
// this rank for the call once Post returns, so a rank that has posted may
// do anything else — wait for a message a peer sends after the call, say —
// before it finishes. Between the two parts the group makes no other
// call: a rank publishes call s+1 only after it finished call s (the
// package's rule for slots), so the caller finishes a posted call before
// it begins the next.

// Kind names an operation for Post and Finish.
type Kind uint8

// The operations a call made in two parts may be.
const (
	KindBarrier Kind = iota + 1
	KindBcast
	KindReduce
	KindAllreduce
	KindAllgather
	KindGather
	KindScatter
	KindScan
	KindExscan
)

// Op is one call's operation and this rank's buffers, as the operations'
// arguments (Bcast's buf is Out).
type Op struct {
	Kind    Kind
	Root    int
	In, Out []byte
	Red     Reducer
}

// CanBegin reports whether the next call begins without waiting: the slot
// it publishes into is free as far as this rank knows, or learns from what
// the peers have published by now (a rank that waits for none in its
// calls, a root broadcasting over and over, may otherwise wait there for
// its slowest peer).
func (g *Group) CanBegin() bool {
	s := g.seq + 1
	if g.err != nil || s <= uint64(g.lay.Slots) {
		return true
	}
	old := s - uint64(g.lay.Slots)
	if g.known >= old {
		return true
	}
	ok, err := g.learn(old, false)
	return ok || err != nil // an error: begin reports it without waiting
}

// Post begins call o of signature sig, and publishes this rank's part of
// it. It returns the call's number and whether the call is over for this
// rank (it reads nothing of the others: a root that gives, a rank that
// only gives, or a failure); otherwise Finish ends it. Post waits only
// where CanBegin is false.
func (g *Group) Post(sig Sig, o *Op) (s uint64, over bool, err error) {
	s, err = g.begin(sig)
	if err != nil {
		return s, true, err
	}
	switch o.Kind {
	case KindBarrier:
		g.publish(s, sig, nil)
	case KindBcast:
		if g.rank == o.Root {
			g.publish(s, sig, o.Out)
			return s, true, nil
		}
		g.publishProgress(s, sig)
	case KindReduce, KindGather:
		if g.rank != o.Root {
			g.publish(s, sig, o.In)
			return s, true, nil
		}
		g.publishProgress(s, sig)
	case KindAllreduce, KindAllgather:
		g.publish(s, sig, o.In)
	case KindScatter:
		if g.rank == o.Root {
			return s, true, g.end(g.scatterGive(s, sig, o.In, o.Out))
		}
		g.publishProgress(s, sig)
	case KindScan, KindExscan:
		g.publish(s, sig, o.In)
		if g.scanLast(o.Kind == KindExscan) == 0 {
			return s, true, nil
		}
	default:
		return s, true, g.fail(fmt.Errorf("nodecoll: no operation of kind %d", o.Kind))
	}
	return s, false, nil
}

// Ready reports whether Finish of posted call s would find every part it
// reads published (or abandoned): it would not wait.
func (g *Group) Ready(s uint64, o *Op) bool {
	lo, hi := 0, len(g.parts) // the ranks read
	switch o.Kind {
	case KindBcast, KindScatter:
		lo, hi = o.Root, o.Root+1
	case KindScan, KindExscan:
		hi = g.scanLast(o.Kind == KindExscan)
	}
	for r := lo; r < hi; r++ {
		if r != g.rank && !g.published(r, s) {
			return false
		}
	}
	return true
}

// Finish ends posted call s, which Post did not report over: it waits
// for the parts this rank reads and makes its result.
func (g *Group) Finish(s uint64, o *Op) error {
	if s != g.seq {
		return g.fail(fmt.Errorf("nodecoll: finishing call %d where call %d runs", s, g.seq))
	}
	sig := g.sig
	var err error
	switch o.Kind {
	case KindBarrier:
		err = g.awaitAll(s, sig, 0)
	case KindBcast:
		err = g.bcastRead(s, sig, o.Out, o.Root)
	case KindReduce:
		err = g.reduceRead(s, sig, o.In, o.Out, o.Red)
	case KindAllreduce:
		err = g.allreduceRead(s, sig, o.In, o.Out, o.Red)
	case KindAllgather, KindGather:
		err = g.gather(s, sig, o.In, o.Out)
	case KindScatter:
		err = g.scatterRead(s, sig, o.Out, o.Root)
	case KindScan, KindExscan:
		err = g.scanRead(s, sig, o.In, o.Out, o.Red, o.Kind == KindExscan)
	}
	return g.end(err)
}
