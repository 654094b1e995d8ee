package coll

// The v-variants move blocks of different sizes: Layout.Counts and
// Layout.Displs give rank r's block, in elements, in the rooted buffer
// (Scatterv's In, Gatherv's Out) or in everyone's Out (Allgatherv);
// Alltoallv has per-peer counts on both sides.

// scattervFlat sends each rank its block from the root's In directly.
func scattervFlat(l Layout) Schedule {
	var s Schedule
	e := l.Elem
	if l.Rank != l.Root {
		s.add(0, Step{Kind: Recv, Peer: l.Root, Buf: Out, Len: l.Counts[l.Rank] * e})
		return s
	}
	for k := 1; k < l.Size; k++ {
		r := (l.Root + k) % l.Size
		s.add(0, Step{Kind: Send, Peer: r, Buf: In, Off: l.Displs[r] * e, Len: l.Counts[r] * e})
	}
	s.add(0, Step{Kind: Copy, Buf: Out, Len: l.Counts[l.Root] * e, From: In, FromOff: l.Displs[l.Root] * e})
	return s
}

// gathervFlat has every rank send its block straight to the root.
func gathervFlat(l Layout) Schedule {
	var s Schedule
	e := l.Elem
	if l.Rank != l.Root {
		s.add(0, Step{Kind: Send, Peer: l.Root, Buf: In, Len: l.Counts[l.Rank] * e})
		return s
	}
	for k := 1; k < l.Size; k++ {
		r := (l.Root + k) % l.Size
		s.add(0, Step{Kind: Recv, Peer: r, Buf: Out, Off: l.Displs[r] * e, Len: l.Counts[r] * e})
	}
	s.add(0, Step{Kind: Copy, Buf: Out, Off: l.Displs[l.Root] * e, Len: l.Counts[l.Root] * e, From: In})
	return s
}

// allgathervRing passes the blocks around the ring as allgatherRing does,
// each at its own size and place.
func allgathervRing(l Layout) Schedule {
	var s Schedule
	n, e, me := l.Size, l.Elem, l.Rank
	blk := func(r int) (int, int) { return l.Displs[r] * e, l.Counts[r] * e }
	o, c := blk(me)
	right, left := (me+1)%n, (me+n-1)%n
	for k := 0; k < n-1; k++ {
		so, sl := blk((me - k + n) % n)
		ro, rl := blk((me - k - 1 + 2*n) % n)
		from := Out
		if k == 0 {
			from, so = In, 0 // as allgatherRing: this rank's block from the input
		}
		s.add(k+1, Step{Kind: Recv, Peer: left, Buf: Out, Off: ro, Len: rl},
			Step{Kind: Send, Peer: right, Buf: from, Off: so, Len: sl})
	}
	s.add(max(n-1, 0), Step{Kind: Copy, Buf: Out, Off: o, Len: c, From: In})
	return s
}

// alltoallvPairwise is alltoallPairwise with per-peer sizes and places.
func alltoallvPairwise(l Layout) Schedule {
	var s Schedule
	n, e, me := l.Size, l.Elem, l.Rank
	s.add(0, Step{Kind: Copy, Buf: Out, Off: l.RecvDispls[me] * e, Len: l.RecvCounts[me] * e, From: In, FromOff: l.SendDispls[me] * e})
	for k := 1; k < n; k++ {
		to, from := (me+k)%n, (me-k+n)%n
		s.add(k, Step{Kind: Recv, Peer: from, Buf: Out, Off: l.RecvDispls[from] * e, Len: l.RecvCounts[from] * e},
			Step{Kind: Send, Peer: to, Buf: In, Off: l.SendDispls[to] * e, Len: l.SendCounts[to] * e})
	}
	return s
}
