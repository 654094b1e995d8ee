package coll

// Allgather gives every rank every rank's In block (l.Bytes each) in Out,
// in rank order.

// allgatherRing passes blocks around the ring: n−1 rounds, each rank
// sending to its right neighbour the block it received the round before.
// Bandwidth-optimal, latency n−1 messages.
//
// The first round sends this rank's block from the input, and the block
// is copied into the output last: a copy of 1 MiB or more goes around the
// caches (the runtime's memmove), so a send of the copy read it back from
// memory — 2 ranks, 1 MiB blocks: 193 µs at the median against the 108
// of an Alltoall moving the same bytes.
func allgatherRing(l Layout) Schedule {
	var s Schedule
	n, b, me := l.Size, l.Bytes, l.Rank
	right, left := (me+1)%n, (me+n-1)%n
	for k := 0; k < n-1; k++ {
		send, recv := (me-k+n)%n, (me-k-1+2*n)%n
		from, off := Out, send*b
		if k == 0 {
			from, off = In, 0
		}
		s.add(k+1, Step{Kind: Recv, Peer: left, Buf: Out, Off: recv * b, Len: b},
			Step{Kind: Send, Peer: right, Buf: from, Off: off, Len: b})
	}
	s.add(max(n-1, 0), Step{Kind: Copy, Buf: Out, Off: me * b, Len: b, From: In})
	return s
}

// pof2 returns the largest power of two ≤ n.
func pof2(n int) int {
	p := 1
	for p*2 <= n {
		p *= 2
	}
	return p
}

// allgatherDoubling is recursive doubling: in round k, ranks 2^k apart
// swap everything they have, so ⌈log2 n⌉ rounds. With n not a power of
// two, the ranks past the largest power of two p first hand their block to
// rank r−p, which carries it through the exchanges and sends the whole
// result back at the end.
func allgatherDoubling(l Layout) Schedule {
	var s Schedule
	n, b, me := l.Size, l.Bytes, l.Rank
	p := pof2(n)
	s.add(0, Step{Kind: Copy, Buf: Out, Off: me * b, Len: b, From: In})
	if me >= p {
		s.add(1, Step{Kind: Send, Peer: me - p, Buf: Out, Off: me * b, Len: b})
		s.add(2, Step{Kind: Recv, Peer: me - p, Buf: Out, Len: n * b})
		return s
	}
	r := 1
	if me+p < n {
		s.add(r, Step{Kind: Recv, Peer: me + p, Buf: Out, Off: (me + p) * b, Len: b})
	}
	// runs returns the blocks rank q holds before the round of mask m: the
	// aligned group of m ranks around q, and their folded partners.
	runs := func(q, m int) [][2]int {
		base := q &^ (m - 1)
		out := [][2]int{{base, m}}
		if lo, hi := base+p, min(base+m+p, n); lo < hi {
			out = append(out, [2]int{lo, hi - lo})
		}
		return out
	}
	for m := 1; m < p; m *= 2 {
		r++
		partner := me ^ m
		for _, run := range runs(partner, m) {
			s.add(r, Step{Kind: Recv, Peer: partner, Buf: Out, Off: run[0] * b, Len: run[1] * b})
		}
		for _, run := range runs(me, m) {
			s.add(r, Step{Kind: Send, Peer: partner, Buf: Out, Off: run[0] * b, Len: run[1] * b})
		}
	}
	if me+p < n {
		s.add(r+1, Step{Kind: Send, Peer: me + p, Buf: Out, Len: n * b})
	}
	return s
}

// allgatherBruck is Bruck's algorithm: ⌈log2 n⌉ rounds for any n. In round
// k a rank sends the first min(2^k, n−2^k) blocks it holds to the rank 2^k
// below it and appends what the rank 2^k above sends; blocks are kept
// rotated (own first) in Tmp and put in rank order at the end.
func allgatherBruck(l Layout) Schedule {
	var s Schedule
	n, b, me := l.Size, l.Bytes, l.Rank
	s.TmpSize = n * b
	s.add(0, Step{Kind: Copy, Buf: Tmp, Len: b, From: In})
	r := 0
	for d := 1; d < n; d *= 2 {
		r++
		cnt := min(d, n-d)
		s.add(r, Step{Kind: Recv, Peer: (me + d) % n, Buf: Tmp, Off: d * b, Len: cnt * b},
			Step{Kind: Send, Peer: (me - d + n) % n, Buf: Tmp, Len: cnt * b})
	}
	// Tmp[i] is rank (me+i) mod n's block.
	first := (n - me) * b
	s.add(r+1, Step{Kind: Copy, Buf: Out, Off: me * b, Len: first, From: Tmp},
		Step{Kind: Copy, Buf: Out, Len: me * b, From: Tmp, FromOff: first})
	return s
}

// allgatherLinear sends this rank's block to every other rank and
// receives theirs, all in one round: no rank forwards what it received,
// so every block moves once, straight from its owner's input — with its
// messages pulled (Algorithm.Pull), each rank reads every peer's block in
// place (seed 004 §4.2), and nobody waits for a neighbour's round before
// its own. It posts n−1 messages each way at once, so it suits few ranks
// or large blocks.
func allgatherLinear(l Layout) Schedule {
	var s Schedule
	n, b, me := l.Size, l.Bytes, l.Rank
	var steps []Step
	for k := 1; k < n; k++ {
		from, to := (me-k+n)%n, (me+k)%n
		steps = append(steps, Step{Kind: Recv, Peer: from, Buf: Out, Off: from * b, Len: b},
			Step{Kind: Send, Peer: to, Buf: In, Len: b})
	}
	steps = append(steps, Step{Kind: Copy, Buf: Out, Off: me * b, Len: b, From: In})
	s.add(0, steps...)
	return s
}
