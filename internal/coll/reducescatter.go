package coll

// Reduce-scatter leaves in rank r's Out block r of the reduction of every
// rank's In, the whole vector (l.Bytes each). The blocks tile the vector
// in rank order: ReduceScatterBlock's are l.Bytes/l.Size each,
// ReduceScatter's are given by l.Counts (see Layout). Both operations share
// their families.

// scatterBlocks returns the blocks' byte offsets: block r is
// [off[r], off[r+1]) of the vector, and off[l.Size] is its length.
func scatterBlocks(l Layout) []int {
	off := make([]int, l.Size+1)
	for r := 0; r < l.Size; r++ {
		size := l.Bytes / l.Size
		if l.Counts != nil {
			size = l.Counts[r] * l.Elem
		}
		off[r+1] = off[r] + size
	}
	return off
}

// largestBlock returns the length of the longest block of off.
func largestBlock(off []int) int {
	m := 0
	for r := 0; r+1 < len(off); r++ {
		m = max(m, off[r+1]-off[r])
	}
	return m
}

// reduceScatterRing passes partial blocks around the ring (the first half
// of allreduceRing): in round k rank r sends the block of rank r−k−1, with
// the contributions it has gathered so far, to r+1 and adds its own to the
// block of rank r−k−2 it receives from r−1. After n−1 rounds every rank
// holds its block whole, each rank having sent (n−1)/n of the vector:
// bandwidth-optimal. A block's contributions are combined starting from
// different ranks, so only commutative operations.
func reduceScatterRing(l Layout) Schedule {
	var s Schedule
	n, me := l.Size, l.Rank
	off := scatterBlocks(l)
	blk := func(i int) (int, int) {
		i = (i%n + n) % n
		return off[i], off[i+1] - off[i]
	}
	mo, ml := blk(me)
	if n == 1 {
		s.add(0, Step{Kind: Copy, Buf: Out, Len: ml, From: In, FromOff: mo})
		return s
	}
	// Two landing slots: round k receives into one while it sends the
	// partial block received in round k−1 from the other.
	slot := largestBlock(off)
	if n > 2 {
		s.TmpSize = 2 * slot
	}
	right, left := (me+1)%n, (me-1+n)%n
	for k := 0; k < n-1; k++ {
		so, sl := blk(me - k - 1)
		ro, rl := blk(me - k - 2)
		in, prev := (k%2)*slot, ((k+1)%2)*slot
		send := Step{Kind: Send, Peer: right, Buf: Tmp, Off: prev, Len: sl}
		if k == 0 {
			send = Step{Kind: Send, Peer: right, Buf: In, Off: so, Len: sl}
		}
		if k < n-2 {
			s.add(k, Step{Kind: Recv, Peer: left, Buf: Tmp, Off: in, Len: rl}, send,
				Step{Kind: Reduce, Buf: Tmp, Off: in, Len: rl, From: In, FromOff: ro})
			continue
		}
		// The last block received is this rank's own: it lands in Out.
		s.add(k, Step{Kind: Recv, Peer: left, Buf: Out, Len: ml}, send,
			Step{Kind: Reduce, Buf: Out, Len: ml, From: In, FromOff: mo})
	}
	return s
}

// foldedBlocks returns the blocks of the p ranks a fold leaves: new rank i
// stands for old ranks 2i and 2i+1 (i < rem) or i+rem, and its block is
// theirs, which lie side by side in the vector.
func foldedBlocks(f fold, off []int) []int {
	nOff := make([]int, f.p+1)
	for i := 0; i < f.p; i++ {
		lo := i + f.rem
		if i < f.rem {
			lo = 2 * i
		}
		nOff[i] = off[lo]
	}
	nOff[f.p] = off[len(off)-1]
	return nOff
}

// foldIn adds the rounds that fold the ranks past the largest power of
// two into their odd neighbours, as fold.in does, into an accumulator of
// the whole vector at Tmp[0:total], with Tmp[total:2·total] to land in: an
// even rank of the first 2·rem sends its In and sits out. It returns the
// next free round.
func foldIn(s *Schedule, l Layout, f fold, total int) int {
	me := l.Rank
	switch {
	case me >= 2*f.rem:
		s.add(0, Step{Kind: Copy, Buf: Tmp, Len: total, From: In})
	case me%2 == 0:
		s.add(0, Step{Kind: Send, Peer: me + 1, Buf: In, Len: total})
	default: // the neighbour's lands in the accumulator, this In joins on the right
		s.add(0, Step{Kind: Recv, Peer: me - 1, Buf: Tmp, Len: total},
			Step{Kind: Reduce, Buf: Tmp, Len: total, From: In})
	}
	return s.next()
}

// foldOut adds the round, from r on, that hands out the blocks from the
// accumulator at Tmp: a rank that stood for two gives the lower its block.
func foldOut(s *Schedule, l Layout, f fold, off []int, r int) {
	me := l.Rank
	mo, ml := off[me], off[me+1]-off[me]
	switch {
	case me < 2*f.rem && me%2 == 0:
		s.add(r, Step{Kind: Recv, Peer: me + 1, Buf: Out, Len: ml})
		return
	case me < 2*f.rem:
		s.add(r, Step{Kind: Send, Peer: me - 1, Buf: Tmp, Off: off[me-1], Len: off[me] - off[me-1]})
	}
	s.add(r, Step{Kind: Copy, Buf: Out, Len: ml, From: Tmp, FromOff: mo})
}

// reduceScatterHalving is recursive halving (MPICH's reduce-scatter for
// commutative operations; the first half of Rabenseifner's allreduce): in
// each of log2 p rounds a rank swaps half of the blocks it is still
// responsible for with its partner and keeps the other half, combined,
// moving (p−1)/p of the vector in all in log2 p steps. Ranks past the
// largest power of two p fold in first and get their block at the end.
// Halves are combined in partner order, not rank order: only commutative
// operations.
func reduceScatterHalving(l Layout) Schedule {
	return reduceScatterFolded(l, func(s *Schedule, f fold, off []int, nr, r int) int {
		nOff := foldedBlocks(f, off)
		total := off[l.Size]
		lo, hi := 0, f.p
		for m := f.p / 2; m >= 1; m /= 2 {
			partner := nr ^ m
			mid := (lo + hi) / 2
			keepLo, keepHi, sendLo, sendHi := lo, mid, mid, hi
			if nr > partner {
				keepLo, keepHi, sendLo, sendHi = mid, hi, lo, mid
			}
			ko, kl := nOff[keepLo], nOff[keepHi]-nOff[keepLo]
			so, sl := nOff[sendLo], nOff[sendHi]-nOff[sendLo]
			peer := f.oldRank(partner)
			s.add(r, Step{Kind: Recv, Peer: peer, Buf: Tmp, Off: total + ko, Len: kl},
				Step{Kind: Send, Peer: peer, Buf: Tmp, Off: so, Len: sl},
				Step{Kind: Reduce, Buf: Tmp, Off: ko, Len: kl, From: Tmp, FromOff: total + ko, FromFirst: partner < nr})
			r++
			lo, hi = keepLo, keepHi
		}
		return r
	})
}

// reduceScatterDoubling is recursive doubling on the whole vector
// (allreduceDoubling), each rank keeping its block: in round k new ranks
// 2^k apart swap their partial results and combine them, the lower new
// rank's on the left, so it keeps rank order. ⌈log2 p⌉ rounds of the
// whole vector, plus the fold's two: few rounds, much data, for small
// vectors (MPICH's choice for non-commutative operations).
func reduceScatterDoubling(l Layout) Schedule {
	return reduceScatterFolded(l, func(s *Schedule, f fold, off []int, nr, r int) int {
		total := off[l.Size]
		for m := 1; m < f.p; m *= 2 {
			partner := nr ^ m
			peer := f.oldRank(partner)
			s.add(r, Step{Kind: Recv, Peer: peer, Buf: Tmp, Off: total, Len: total},
				Step{Kind: Send, Peer: peer, Buf: Tmp, Len: total},
				Step{Kind: Reduce, Buf: Tmp, Len: total, From: Tmp, FromOff: total, FromFirst: partner < nr})
			r++
		}
		return r
	})
}

// reduceScatterFolded builds a reduce-scatter whose ranks past the largest
// power of two fold in first (foldIn) and get their block at the end
// (foldOut), with 2 vectors of scratch: rounds adds the exchanges of
// folded rank nr from round r, on the blocks at offsets off, and returns
// the round after them. A rank alone copies its input.
func reduceScatterFolded(l Layout, rounds func(s *Schedule, f fold, off []int, nr, r int) int) Schedule {
	var s Schedule
	off := scatterBlocks(l)
	total := off[l.Size]
	if l.Size == 1 {
		s.add(0, Step{Kind: Copy, Buf: Out, Len: total, From: In})
		return s
	}
	f := newFold(l.Size)
	s.TmpSize = 2 * total
	r := foldIn(&s, l, f, total)
	if nr := f.newRank(l.Rank); nr >= 0 {
		r = rounds(&s, f, off, nr, r)
	}
	foldOut(&s, l, f, off, r)
	return s
}

// reduceScatterTree reduces the vector to rank 0 on a tree
// (reduceSchedule, which keeps rank order), then rank 0 sends each rank
// its block, as Scatterv's flat algorithm does: it takes non-commutative
// operations, and the blocks of ReduceScatter whatever their sizes.
func reduceScatterTree(l Layout, shape Shape, fanout int) Schedule {
	n, me := l.Size, l.Rank
	off := scatterBlocks(l)
	total := off[n]
	rl := l
	rl.Root, rl.Bytes, rl.Counts = 0, total, nil
	s := reduceSchedule(rl, shape, fanout, 0, false)
	// Rank 0's result builds up in its Out: move it to the front of Tmp,
	// and the tree's scratch behind it.
	if me == 0 {
		s = relocate(s, total)
	}
	r := s.next()
	if me != 0 {
		s.add(r, Step{Kind: Recv, Peer: 0, Buf: Out, Len: off[me+1] - off[me]})
		return s
	}
	for k := 1; k < n; k++ {
		s.add(r, Step{Kind: Send, Peer: k, Buf: Tmp, Off: off[k], Len: off[k+1] - off[k]})
	}
	s.add(r, Step{Kind: Copy, Buf: Out, Len: off[1], From: Tmp})
	return s
}

// relocate returns s with its Out moved to Tmp[0:size] and its Tmp moved
// to Tmp[size:].
func relocate(s Schedule, size int) Schedule {
	move := func(b Buf, off int) (Buf, int) {
		switch b {
		case Out:
			return Tmp, off
		case Tmp:
			return Tmp, off + size
		}
		return b, off
	}
	out := Schedule{Rounds: make([][]Step, len(s.Rounds)), TmpSize: size + s.TmpSize}
	for i, round := range s.Rounds {
		out.Rounds[i] = make([]Step, len(round))
		for j, st := range round {
			st.Buf, st.Off = move(st.Buf, st.Off)
			if st.Kind == Reduce || st.Kind == Copy {
				st.From, st.FromOff = move(st.From, st.FromOff)
			}
			out.Rounds[i][j] = st
		}
	}
	return out
}
