package coll

// Scan leaves in rank r's Out the reduction of the In of ranks 0 … r;
// Exscan that of ranks 0 … r−1, and nothing in rank 0's Out (which it
// leaves as it was). Every vector is l.Bytes long. Both families keep
// rank order, so they take non-commutative operations.

// scanLinear passes the prefix along the chain of ranks, pipelined in
// segments of seg bytes (0: whole): rank r receives segment i of the
// prefix of ranks 0 … r−1 from r−1, combines its own into it (on the
// right) and sends the result's segment i to r+1 in the next round, while
// it receives segment i+1. n−1 hops on the critical path, each rank
// sending and receiving the vector once.
func scanLinear(l Layout, seg int) Schedule {
	var s Schedule
	n, me := l.Size, l.Rank
	if me == 0 {
		s.add(0, Step{Kind: Copy, Buf: Out, Len: l.Bytes, From: In})
	}
	if n == 1 {
		return s
	}
	segs := segments(l.Bytes, seg, l.Elem)
	for i := 0; i <= len(segs); i++ {
		if i < len(segs) && me > 0 {
			// The prefix lands in Out and this rank's In joins it on
			// the right: no copy of In first.
			sg := segs[i]
			s.add(i, Step{Kind: Recv, Peer: me - 1, Buf: Out, Off: sg[0], Len: sg[1]},
				Step{Kind: Reduce, Buf: Out, Off: sg[0], Len: sg[1], From: In, FromOff: sg[0]})
		}
		if i >= 1 && me < n-1 {
			sg := segs[i-1]
			s.add(i, Step{Kind: Send, Peer: me + 1, Buf: Out, Off: sg[0], Len: sg[1]})
		}
	}
	return s
}

// exscanLinear is scanLinear for Exscan: rank r receives the prefix of
// ranks 0 … r−1, its result, straight into Out, and sends r+1 that prefix
// with its own In combined on the right (rank 0 sends its In).
func exscanLinear(l Layout, seg int) Schedule {
	var s Schedule
	n, me := l.Size, l.Rank
	if n == 1 {
		return s
	}
	segs := segments(l.Bytes, seg, l.Elem)
	// What this rank sends on: its In on rank 0, else Tmp.
	next := Tmp
	switch {
	case me == 0:
		next = In
	case me < n-1:
		s.TmpSize = l.Bytes
	}
	for i := 0; i <= len(segs); i++ {
		if i < len(segs) && me > 0 {
			sg := segs[i]
			s.add(i, Step{Kind: Recv, Peer: me - 1, Buf: Out, Off: sg[0], Len: sg[1]})
			if me < n-1 {
				s.add(i, Step{Kind: Copy, Buf: Tmp, Off: sg[0], Len: sg[1], From: In, FromOff: sg[0]},
					Step{Kind: Reduce, Buf: Tmp, Off: sg[0], Len: sg[1], From: Out, FromOff: sg[0], FromFirst: true})
			}
		}
		if i >= 1 && me < n-1 {
			sg := segs[i-1]
			s.add(i, Step{Kind: Send, Peer: me + 1, Buf: next, Off: sg[0], Len: sg[1]})
		}
	}
	return s
}

// scanDoubling is MPICH's recursive doubling: in round k rank r swaps with
// r XOR 2^k (when there is such a rank) the reduction of the 2^k-aligned
// group of ranks it belongs to, and both combine it into their group's
// for the next round; the rank above also combines it into its result.
// A partner below contributes on the left, one above on the right, so
// rank order holds. ⌈log2 n⌉ rounds of the whole vector, for any n.
// exclusive makes it Exscan's: the result leaves out the rank's own In,
// and rank 0's Out is not written.
func scanDoubling(l Layout, exclusive bool) Schedule {
	var s Schedule
	n, me, b := l.Size, l.Rank, l.Bytes
	if !exclusive {
		s.add(0, Step{Kind: Copy, Buf: Out, Len: b, From: In})
	}
	if n == 1 {
		return s
	}
	// Tmp[0:b] is the group's reduction, Tmp[b:2b] the partner's.
	s.TmpSize = 2 * b
	s.add(0, Step{Kind: Copy, Buf: Tmp, Len: b, From: In})
	r, got := 1, false // got: Out holds a partial result (Exscan)
	for m := 1; m < n; m *= 2 {
		partner := me ^ m
		if partner >= n {
			continue
		}
		s.add(r, Step{Kind: Recv, Peer: partner, Buf: Tmp, Off: b, Len: b},
			Step{Kind: Send, Peer: partner, Buf: Tmp, Len: b})
		if 2*m < n { // the group's reduction is needed in a later round
			s.add(r, Step{Kind: Reduce, Buf: Tmp, Len: b, From: Tmp, FromOff: b, FromFirst: partner < me})
		}
		switch {
		case partner > me:
		case exclusive && !got:
			s.add(r, Step{Kind: Copy, Buf: Out, Len: b, From: Tmp, FromOff: b})
			got = true
		default:
			s.add(r, Step{Kind: Reduce, Buf: Out, Len: b, From: Tmp, FromOff: b, FromFirst: true})
		}
		r++
	}
	return s
}
