package nodecoll

import "fmt"

// begin starts the next call: it returns its number, once this rank's
// slot for it is free (every rank finished the call the slot held).
func (g *Group) begin() (uint64, error) {
	if g.err != nil {
		return 0, g.err
	}
	g.seq++
	s := g.seq
	if old := s - uint64(g.lay.Slots); s > uint64(g.lay.Slots) && g.known < old {
		if err := g.learnDone(old); err != nil {
			return 0, g.fail(err)
		}
	}
	return s, nil
}

// learnDone waits until every rank has finished call s (entered call
// s+1), and learns as much more as it sees at no cost.
func (g *Group) learnDone(s uint64) error {
	least := ^uint64(0)
	for r := range g.parts {
		if r == g.rank {
			continue
		}
		if err := g.w.wait(g, r, s+1); err != nil {
			return err
		}
		// How far r has come, at least: the slots it published since.
		e := s + 1
		for e < g.seq-1 && g.seqWord(r, e+1).Load()&^abortBit >= e+1 {
			e++
		}
		least = min(least, e-1)
	}
	g.known = max(g.known, min(least, g.seq-1))
	return nil
}

// publish writes this rank's signature and data for call s, then its
// sequence word, and wakes whoever sleeps on it.
func (g *Group) publish(s uint64, sig Sig, data []byte) {
	o := g.slotOff(s)
	p := g.parts[g.rank]
	*g.plain(g.rank, o+offSig) = sig[0]
	*g.plain(g.rank, o+offSig+8) = sig[1]
	*g.plain(g.rank, o+offLen) = uint64(len(data))
	copy(p[o+offData:], data)
	g.word(g.rank, o+offSeq).Store(s)
	if g.sleepers(g.rank).Load() != 0 {
		g.w.wake(g.rank, g.seqWord(g.rank, s))
	}
}

// await waits for rank r's part of call s, and checks that r agrees on
// its signature, and on its data length when want ≥ 0; it returns r's
// data.
func (g *Group) await(s uint64, r int, sig Sig, want int) ([]byte, error) {
	if err := g.w.wait(g, r, s); err != nil {
		return nil, err
	}
	got, n := g.sigOf(r, s)
	if got != sig || (want >= 0 && n != want) || n > g.lay.MaxData() {
		return nil, fmt.Errorf("%w: rank %d calls %s with %d bytes, rank %d %s with %d",
			ErrMismatch, r, g.w.describe(got), n, g.rank, g.w.describe(sig), want)
	}
	return g.data(r, s, n), nil
}

// awaitAll waits for every other rank's part of call s (want: as await),
// and then knows that all finished call s-1.
func (g *Group) awaitAll(s uint64, sig Sig, want int) error {
	for r := range g.parts {
		if r == g.rank {
			continue
		}
		if _, err := g.await(s, r, sig, want); err != nil {
			return err
		}
	}
	g.known = max(g.known, s-1)
	return nil
}

// fail stops the group with err, tells the peers (Abort), and returns err.
func (g *Group) fail(err error) error {
	g.Abort(err)
	return err
}

// Abort stops the group: this rank's calls fail with err from now on, and
// every peer waiting for it, or later for any of its calls, fails with
// ErrAborted. The communicator is then out of step.
func (g *Group) Abort(err error) {
	if g.err != nil {
		return
	}
	g.err = err
	if g.w.Leaving != nil {
		g.w.Leaving(err)
	}
	for i := range g.lay.Slots {
		w := g.word(g.rank, Line+i*g.lay.SlotSize+offSeq)
		w.Store(w.Load() | abortBit)
		if g.sleepers(g.rank).Load() != 0 {
			g.w.wake(g.rank, w)
		}
	}
}

// Err returns why the group stopped, or nil.
func (g *Group) Err() error { return g.err }
