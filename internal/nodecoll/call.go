package nodecoll

import "fmt"

// begin starts the next call, of signature sig: it returns its number,
// once this rank's slot for it is free (every rank finished the call the
// slot held).
func (g *Group) begin(sig Sig) (uint64, error) {
	if g.err != nil {
		return 0, g.err
	}
	g.seq++
	s := g.seq
	g.prev, g.sig = g.sig, sig
	if old := s - uint64(g.lay.Slots); s > uint64(g.lay.Slots) && g.known < old {
		if err := g.learnDone(old); err != nil {
			return 0, g.fail(err)
		}
	}
	return s, nil
}

// learnDone waits until every rank has finished call s (entered a later
// one), and learns as much more as it sees at no cost. A rank that gives
// nothing in a call may leave it unpublished (publishProgress), but every
// rank publishes each call whose number is a multiple of progressEvery:
// the first such call after s is the one to wait for, unless the rank
// published an earlier one.
func (g *Group) learnDone(s uint64) error {
	_, err := g.learn(s, true)
	return err
}

// learn is learnDone that, unless wait, returns false at once where it
// would wait.
func (g *Group) learn(s uint64, wait bool) (bool, error) {
	least := ^uint64(0)
	k := g.progressEvery()
	sure := (s/k + 1) * k // > s, published by every rank
	for r := range g.parts {
		if r == g.rank {
			continue
		}
		e := s + 1 // r published call e: it finished e-1
		if !g.published(r, e) {
			if !wait && !g.published(r, sure) {
				return false, nil
			}
			if err := g.w.wait(g, r, sure); err != nil {
				return false, err
			}
			e = sure
		}
		// How far r has come, at least: the calls it published since.
		for e < g.seq-1 {
			if g.published(r, e+1) {
				e++
			} else if next := (e/k + 1) * k; next < g.seq && g.published(r, next) {
				e = next
			} else {
				break
			}
		}
		least = min(least, e-1)
	}
	g.known = max(g.known, min(least, g.seq-1))
	return true, nil
}

// published reports whether rank r has published call s (or a later call
// of the same slot), abandoned or not.
func (g *Group) published(r int, s uint64) bool {
	return g.seqWord(r, s).Load()&^abortBit >= s
}

// publish writes this rank's signature and data for call s, then its
// sequence word, and wakes whoever sleeps on it.
func (g *Group) publish(s uint64, sig Sig, data []byte) {
	o := g.slotOff(s)
	p := g.parts[g.rank]
	*g.plain(g.rank, o+offSig) = sig[0]
	*g.plain(g.rank, o+offSig+8) = sig[1]
	*g.plain(g.rank, o+offLen) = uint64(len(data)) | prevHash(g.prev)<<lenBits
	copy(p[o+offData:], data)
	g.word(g.rank, o+offSeq).Store(s)
	if g.sleepers(g.rank).Load() != 0 {
		g.w.wake(g.rank, g.seqWord(g.rank, s))
	}
}

// progressEvery is how many calls pass between two publications of a
// rank that has nothing to give in them (a Bcast's or Scatter's reader, a
// Reduce's or Gather's root): no peer reads its part then but to learn
// whether a slot is free again (learnDone), so publishing one call in
// progressEvery spares the line a trip between the ranks at most calls;
// a peer then runs ahead by Slots-progressEvery calls at most.
func (g *Group) progressEvery() uint64 { return uint64(max(1, g.lay.Slots/4)) }

// publishProgress publishes call s of a rank that gives nothing in it,
// when s is one of the calls such a rank publishes (progressEvery).
func (g *Group) publishProgress(s uint64, sig Sig) {
	if s%g.progressEvery() == 0 {
		g.publish(s, sig, nil)
	}
}

// await waits for rank r's part of call s, and checks that r agrees on
// its signature, and on its data length when want ≥ 0; it returns r's
// data.
func (g *Group) await(s uint64, r int, sig Sig, want int) ([]byte, error) {
	if err := g.w.wait(g, r, s); err != nil {
		return nil, err
	}
	got, n, prev := g.sigOf(r, s)
	if got != sig || (want >= 0 && n != want) || n > g.lay.MaxData() {
		return nil, fmt.Errorf("%w: rank %d calls %s with %d bytes, rank %d %s with %d",
			ErrMismatch, r, g.w.describe(got), n, g.rank, g.w.describe(sig), want)
	}
	if s > 1 && prev != prevHash(g.prev) {
		// The call before: ranks that each believed another the root,
		// or themselves, read nothing in it, and learn here that they
		// disagreed.
		return nil, fmt.Errorf("%w: rank %d made another call than rank %d's %s before this one",
			ErrMismatch, r, g.rank, g.w.describe(g.prev))
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

// fail stops the group with err in the running call, tells the peers,
// and returns err.
func (g *Group) fail(err error) error {
	g.abort(err, g.seq)
	return err
}

// Abort stops the group between calls: this rank's calls fail with err
// from now on, and every peer waiting for it in the next call or a later
// one fails with ErrAborted. The communicator is then out of step.
func (g *Group) Abort(err error) { g.abort(err, g.seq+1) }

// abort stops the group, leaving in call at: peers fail that call and the
// later ones; the calls before it, which this rank finished, stand for a
// peer still in one (Waiter.seen).
func (g *Group) abort(err error, at uint64) {
	if g.err != nil {
		return
	}
	g.err = err
	if g.w.Leaving != nil {
		g.w.Leaving(err)
	}
	g.abortedAt(g.rank).Store(at) // before the marks: a peer that sees one reads it
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
