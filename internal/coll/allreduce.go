package coll

// Allreduce leaves in every rank's Out the reduction of every rank's In
// (l.Bytes each).

// allreduceReduceBcast reduces to rank 0 on a tree, then broadcasts from
// it on the same tree, both pipelined in segments of seg bytes. It keeps
// rank order, so it takes non-commutative operations.
func allreduceReduceBcast(l Layout, shape Shape, fanout, seg int) Schedule {
	rl := l
	rl.Root = 0
	s := reduceSchedule(rl, shape, fanout, seg, false)
	b := bcastSchedule(rl, shape, fanout, seg)
	s.Rounds = append(s.Rounds, b.Rounds...)
	return s
}

// fold pairs off the ranks past the largest power of two p ≤ n (MPICH's
// scheme): of the first 2·(n−p) ranks each even rank hands its data to the
// odd rank above and sits out; the p ranks left get new ranks 0..p−1 in
// rank order, so a new rank's data always covers consecutive ranks.
type fold struct {
	p, rem int
}

func newFold(n int) fold {
	p := pof2(n)
	return fold{p: p, rem: n - p}
}

// newRank returns r's rank among the p, or −1 if it sits out.
func (f fold) newRank(r int) int {
	switch {
	case r < 2*f.rem && r%2 == 0:
		return -1
	case r < 2*f.rem:
		return r / 2
	}
	return r - f.rem
}

// oldRank is newRank's inverse.
func (f fold) oldRank(nr int) int {
	if nr < f.rem {
		return 2*nr + 1
	}
	return nr + f.rem
}

// in adds the round that folds the data into the odd ranks, which
// receive their neighbour's straight into Out and combine their own In
// into it; the even ranks send their In. It returns the next free round,
// and fromIn: this rank's data is still only in In (a rank the fold
// passes by), so the caller's first round reads In and writes Out — no
// copy of the vector into Out first. A lone rank copies In to Out.
func (f fold) in(s *Schedule, l Layout) (next int, fromIn bool) {
	me := l.Rank
	switch {
	case f.p == 1:
		s.add(0, Step{Kind: Copy, Buf: Out, Len: l.Bytes, From: In})
	case me >= 2*f.rem:
		return 0, true
	case me%2 == 0:
		s.add(0, Step{Kind: Send, Peer: me + 1, Buf: In, Len: l.Bytes})
	default:
		s.add(0, Step{Kind: Recv, Peer: me - 1, Buf: Out, Len: l.Bytes},
			Step{Kind: Reduce, Buf: Out, Len: l.Bytes, From: In})
	}
	return s.next(), false
}

// out adds the round that gives the ranks that sat out the result.
func (f fold) out(s *Schedule, l Layout, r int) {
	me := l.Rank
	switch {
	case me >= 2*f.rem:
	case me%2 == 0:
		s.add(r, Step{Kind: Recv, Peer: me + 1, Buf: Out, Len: l.Bytes})
	default:
		s.add(r, Step{Kind: Send, Peer: me - 1, Buf: Out, Len: l.Bytes})
	}
}

// allreduceDoubling is recursive doubling: in round k, new ranks 2^k apart
// swap their whole partial results and combine them, the lower new rank's
// on the left, so ⌈log2 p⌉ rounds of the whole vector (plus two with a
// fold): the latency-optimal choice for small vectors. It keeps rank
// order.
func allreduceDoubling(l Layout) Schedule {
	var s Schedule
	f := newFold(l.Size)
	r, fromIn := f.in(&s, l)
	if nr := f.newRank(l.Rank); nr >= 0 {
		for m := 1; m < f.p; m *= 2 {
			partner := nr ^ m
			peer := f.oldRank(partner)
			if fromIn && m == 1 {
				// The partner's data lands in Out, and this rank's
				// own joins it from In on its side of the operator.
				s.add(r, Step{Kind: Recv, Peer: peer, Buf: Out, Len: l.Bytes},
					Step{Kind: Send, Peer: peer, Buf: In, Len: l.Bytes},
					Step{Kind: Reduce, Buf: Out, Len: l.Bytes, From: In, FromFirst: nr < partner})
			} else {
				s.TmpSize = l.Bytes
				s.add(r, Step{Kind: Recv, Peer: peer, Buf: Tmp, Len: l.Bytes},
					Step{Kind: Send, Peer: peer, Buf: Out, Len: l.Bytes},
					Step{Kind: Reduce, Buf: Out, Len: l.Bytes, From: Tmp, FromFirst: partner < nr})
			}
			r++
		}
	}
	f.out(&s, l, r)
	return s
}

// blocks splits l.Bytes into k blocks on element boundaries, the first
// ones one element longer when it does not divide: block i is
// [off[i], off[i+1]).
func blocks(l Layout, k int) []int {
	elems := l.Bytes / l.Elem
	off := make([]int, k+1)
	for i := 0; i < k; i++ {
		size := elems / k
		if i < elems%k {
			size++
		}
		off[i+1] = off[i] + size*l.Elem
	}
	return off
}

// allreduceRing is reduce-scatter then allgather around the ring (seed
// 001's bandwidth-optimal family, Open MPI's "ring"): the vector is cut
// into n blocks; in n−1 rounds each block travels the ring gathering every
// rank's contribution, in n−1 more the finished blocks travel again. Each
// rank sends 2·(n−1)/n of the vector in all. A block's contributions are
// combined starting from different ranks, so only commutative operations.
func allreduceRing(l Layout) Schedule {
	var s Schedule
	n, me := l.Size, l.Rank
	off := blocks(l, n)
	blk := func(i int) (int, int) {
		i = (i%n + n) % n
		return off[i], off[i+1] - off[i]
	}
	if n == 1 {
		s.add(0, Step{Kind: Copy, Buf: Out, Len: l.Bytes, From: In})
		return s
	}
	// Each block is combined into once, while Out holds nothing of it
	// yet: the partial result lands in Out and this rank's In joins it —
	// no copy of In into Out, no scratch. The first block sent is this
	// rank's own, straight from In.
	right, left := (me+1)%n, (me-1+n)%n
	r := 0
	for k := 0; k < n-1; k++ {
		so, sl := blk(me - k)
		ro, rl := blk(me - k - 1)
		from := Out
		if k == 0 {
			from = In
		}
		s.add(r, Step{Kind: Recv, Peer: left, Buf: Out, Off: ro, Len: rl},
			Step{Kind: Send, Peer: right, Buf: from, Off: so, Len: sl},
			Step{Kind: Reduce, Buf: Out, Off: ro, Len: rl, From: In, FromOff: ro, FromFirst: true})
		r++
	}
	// Rank me now holds block me+1 whole.
	for k := 0; k < n-1; k++ {
		so, sl := blk(me + 1 - k)
		ro, rl := blk(me - k)
		s.add(r, Step{Kind: Recv, Peer: left, Buf: Out, Off: ro, Len: rl},
			Step{Kind: Send, Peer: right, Buf: Out, Off: so, Len: sl})
		r++
	}
	return s
}

// allreduceRabenseifner is Rabenseifner's algorithm (MPICH's choice for
// long vectors): a reduce-scatter by recursive halving — in each round a
// rank swaps half of what it is responsible for with its partner and keeps
// the other half, combined — then an allgather by recursive doubling
// retracing the halving in reverse. log2 p rounds each way moving
// (p−1)/p of the vector: the bandwidth of the ring with the latency of
// doubling. Ranks past a power of two fold in first. Only commutative
// operations (halves are combined in partner order, not rank order).
func allreduceRabenseifner(l Layout) Schedule {
	var s Schedule
	f := newFold(l.Size)
	r, fromIn := f.in(&s, l)
	nr := f.newRank(l.Rank)
	if nr < 0 {
		f.out(&s, l, r)
		return s
	}
	off := blocks(l, f.p)
	span := func(lo, hi int) (int, int) { return off[lo], off[hi] - off[lo] }
	type half struct{ keepLo, keepHi, sendLo, sendHi, peer int }
	var steps []half
	lo, hi := 0, f.p
	for m := f.p / 2; m >= 1; m /= 2 {
		partner := nr ^ m
		mid := (lo + hi) / 2
		h := half{peer: f.oldRank(partner)}
		if nr < partner {
			h.keepLo, h.keepHi, h.sendLo, h.sendHi = lo, mid, mid, hi
		} else {
			h.keepLo, h.keepHi, h.sendLo, h.sendHi = mid, hi, lo, mid
		}
		ko, kl := span(h.keepLo, h.keepHi)
		so, sl := span(h.sendLo, h.sendHi)
		if fromIn && m == f.p/2 {
			// The first halving reads In: the partner's half lands
			// in Out, the half given away is filled at the end.
			s.add(r, Step{Kind: Recv, Peer: h.peer, Buf: Out, Off: ko, Len: kl},
				Step{Kind: Send, Peer: h.peer, Buf: In, Off: so, Len: sl},
				Step{Kind: Reduce, Buf: Out, Off: ko, Len: kl, From: In, FromOff: ko})
		} else {
			s.TmpSize = l.Bytes
			s.add(r, Step{Kind: Recv, Peer: h.peer, Buf: Tmp, Off: ko, Len: kl},
				Step{Kind: Send, Peer: h.peer, Buf: Out, Off: so, Len: sl},
				Step{Kind: Reduce, Buf: Out, Off: ko, Len: kl, From: Tmp, FromOff: ko})
		}
		r++
		steps = append(steps, h)
		lo, hi = h.keepLo, h.keepHi
	}
	for i := len(steps) - 1; i >= 0; i-- {
		h := steps[i]
		ko, kl := span(h.keepLo, h.keepHi)
		so, sl := span(h.sendLo, h.sendHi)
		s.add(r, Step{Kind: Recv, Peer: h.peer, Buf: Out, Off: so, Len: sl},
			Step{Kind: Send, Peer: h.peer, Buf: Out, Off: ko, Len: kl})
		r++
	}
	f.out(&s, l, r)
	return s
}
