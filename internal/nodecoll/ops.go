package nodecoll

import "fmt"

// The operations. Each is one call on every rank (the same operation,
// root and sizes, which the signature says), with at most MaxData bytes
// published per rank. A call that fails stops the group (Abort): the
// peers waiting for this rank fail too.

// Barrier returns once every rank has entered it.
func (g *Group) Barrier(sig Sig) error {
	s, err := g.begin(sig)
	if err != nil {
		return err
	}
	g.publish(s, sig, nil)
	return g.end(g.awaitAll(s, sig, 0))
}

// Bcast copies the root's buf into every other rank's.
func (g *Group) Bcast(sig Sig, buf []byte, root int) error {
	s, err := g.begin(sig)
	if err != nil {
		return err
	}
	if g.rank == root {
		g.publish(s, sig, buf)
		return nil
	}
	g.publishProgress(s, sig)
	return g.end(g.bcastRead(s, sig, buf, root))
}

// bcastRead is a reader's part of Bcast call s once begun.
func (g *Group) bcastRead(s uint64, sig Sig, buf []byte, root int) error {
	d, err := g.await(s, root, sig, len(buf))
	if err == nil {
		copy(buf, d)
	}
	return err
}

// Reduce combines every rank's in, in rank order, into the root's out.
func (g *Group) Reduce(sig Sig, in, out []byte, root int, red Reducer) error {
	s, err := g.begin(sig)
	if err != nil {
		return err
	}
	if g.rank != root {
		g.publish(s, sig, in)
		return nil
	}
	g.publishProgress(s, sig)
	return g.end(g.reduceRead(s, sig, in, out, red))
}

// reduceRead is the root's part of Reduce call s once begun.
func (g *Group) reduceRead(s uint64, sig Sig, in, out []byte, red Reducer) error {
	if err := g.awaitAll(s, sig, -1); err != nil {
		return err
	}
	return g.combine(s, 0, len(g.parts), in, out, red)
}

// Allreduce combines every rank's in, in rank order, into every rank's
// out.
func (g *Group) Allreduce(sig Sig, in, out []byte, red Reducer) error {
	s, err := g.begin(sig)
	if err != nil {
		return err
	}
	g.publish(s, sig, in)
	return g.end(g.allreduceRead(s, sig, in, out, red))
}

// allreduceRead is the part of Allreduce call s after this rank's
// publication.
func (g *Group) allreduceRead(s uint64, sig Sig, in, out []byte, red Reducer) error {
	if err := g.awaitAll(s, sig, len(in)); err != nil {
		return err
	}
	return g.combine(s, 0, len(g.parts), in, out, red)
}

// Scan combines the in of ranks 0 to this one, in rank order, into out;
// Exscan (exclusive) those of ranks 0 to the one before, leaving rank 0's
// out as it was.
func (g *Group) Scan(sig Sig, in, out []byte, red Reducer, exclusive bool) error {
	s, err := g.begin(sig)
	if err != nil {
		return err
	}
	g.publish(s, sig, in)
	if g.scanLast(exclusive) == 0 {
		return nil // Exscan's rank 0: nothing to read
	}
	return g.end(g.scanRead(s, sig, in, out, red, exclusive))
}

// scanLast is the number of ranks whose input this rank's Scan (or
// Exscan) result combines.
func (g *Group) scanLast(exclusive bool) int {
	if exclusive {
		return g.rank
	}
	return g.rank + 1
}

// scanRead is the part of Scan call s after this rank's publication.
func (g *Group) scanRead(s uint64, sig Sig, in, out []byte, red Reducer, exclusive bool) error {
	last := g.scanLast(exclusive)
	for r := range last {
		if r == g.rank {
			continue
		}
		if _, err := g.await(s, r, sig, len(in)); err != nil {
			return err
		}
	}
	return g.combine(s, 0, last, in, out, red)
}

// combine reduces the data of ranks lo to hi-1 of call s (this rank's:
// in) into out, in rank order.
func (g *Group) combine(s uint64, lo, hi int, in, out []byte, red Reducer) error {
	n := len(out)
	part := func(r int) ([]byte, error) {
		if r == g.rank {
			return in[:n], nil
		}
		_, m, _ := g.sigOf(r, s)
		if m != n {
			return nil, fmt.Errorf("%w: rank %d gives %d bytes, rank %d receives %d", ErrMismatch, r, m, g.rank, n)
		}
		return g.data(r, s, n), nil
	}
	d, err := part(lo)
	if err != nil {
		return err
	}
	copy(out, d)
	for r := lo + 1; r < hi; r++ {
		d, err := part(r)
		if err != nil {
			return err
		}
		red(out, d, false)
	}
	return nil
}

// Allgather gives every rank every rank's in, in rank order, in out.
func (g *Group) Allgather(sig Sig, in, out []byte) error {
	s, err := g.begin(sig)
	if err != nil {
		return err
	}
	g.publish(s, sig, in)
	return g.end(g.gather(s, sig, in, out))
}

// Gather gives the root every rank's in, in rank order, in out.
func (g *Group) Gather(sig Sig, in, out []byte, root int) error {
	s, err := g.begin(sig)
	if err != nil {
		return err
	}
	if g.rank != root {
		g.publish(s, sig, in)
		return nil
	}
	g.publishProgress(s, sig)
	return g.end(g.gather(s, sig, in, out))
}

// gather copies every rank's data of call s (this rank's: in) into out,
// in rank order; it then knows that every rank finished call s-1.
func (g *Group) gather(s uint64, sig Sig, in, out []byte) error {
	n := len(in)
	if len(out) != n*len(g.parts) {
		return fmt.Errorf("%w: %d bytes gathered from %d ranks of %d", ErrMismatch, len(out), len(g.parts), n)
	}
	for r := range g.parts {
		if r == g.rank {
			copy(out[r*n:], in)
			continue
		}
		d, err := g.await(s, r, sig, n)
		if err != nil {
			return err
		}
		copy(out[r*n:], d)
	}
	g.known = max(g.known, s-1)
	return nil
}

// Scatter gives every rank its block of the root's in (blocks of
// len(out) bytes, in rank order), in out.
func (g *Group) Scatter(sig Sig, in, out []byte, root int) error {
	s, err := g.begin(sig)
	if err != nil {
		return err
	}
	if g.rank == root {
		return g.end(g.scatterGive(s, sig, in, out))
	}
	g.publishProgress(s, sig)
	return g.end(g.scatterRead(s, sig, out, root))
}

// scatterGive is the root's part of Scatter call s once begun.
func (g *Group) scatterGive(s uint64, sig Sig, in, out []byte) error {
	n := len(out)
	if len(in) != n*len(g.parts) {
		return fmt.Errorf("%w: %d bytes scattered to %d ranks of %d", ErrMismatch, len(in), len(g.parts), n)
	}
	g.publish(s, sig, in)
	copy(out, in[g.rank*n:])
	return nil
}

// scatterRead is a reader's part of Scatter call s once begun.
func (g *Group) scatterRead(s uint64, sig Sig, out []byte, root int) error {
	n := len(out)
	d, err := g.await(s, root, sig, n*len(g.parts))
	if err == nil {
		copy(out, d[g.rank*n:])
	}
	return err
}

// end ends a call that returned err: a failed call stops the group.
func (g *Group) end(err error) error {
	if err != nil {
		return g.fail(err)
	}
	return nil
}
