package coll

// Scatter and gather move a block of l.Bytes per rank. On a tree every
// subtree is a contiguous vrank range, so a subtree's blocks travel as one
// piece in vrank order (seed 001 §3.2's "packet forwarders"): the root
// lays its blocks out in vrank order, each rank forwards to each child the
// blocks of that child's subtree.

// scatterSchedule sends block r of the root's In to rank r's Out.
func scatterSchedule(l Layout, shape Shape, fanout int) Schedule {
	var s Schedule
	n, b := l.Size, l.Bytes
	if n == 1 {
		s.add(0, Step{Kind: Copy, Buf: Out, Len: b, From: In})
		return s
	}
	v := vrankOf(l.Rank, l.Root, n)
	nd := treeNode(shape, fanout, v, n)
	kids := bySpan(shape, fanout, n, nd.children)
	// Tmp holds this rank's subtree's blocks in vrank order, its own first.
	s.TmpSize = nd.span * b
	if nd.parent < 0 {
		// Rotate the root's blocks into vrank order: vrank v is rank
		// (v + root) mod n, so the blocks from the root's on come first.
		first := (n - l.Root) * b
		s.add(0, Step{Kind: Copy, Buf: Tmp, Len: first, From: In, FromOff: l.Root * b},
			Step{Kind: Copy, Buf: Tmp, Off: first, Len: l.Root * b, From: In})
	} else {
		s.add(0, Step{Kind: Recv, Peer: rankOf(nd.parent, l.Root, n), Buf: Tmp, Len: nd.span * b})
	}
	r := s.next()
	for _, c := range kids {
		span := treeNode(shape, fanout, c, n).span
		s.add(r, Step{Kind: Send, Peer: rankOf(c, l.Root, n), Buf: Tmp, Off: (c - v) * b, Len: span * b})
	}
	s.add(r, Step{Kind: Copy, Buf: Out, Len: b, From: Tmp})
	return s
}

// gatherSchedule collects rank r's In into block r of the root's Out.
func gatherSchedule(l Layout, shape Shape, fanout int) Schedule {
	var s Schedule
	n, b := l.Size, l.Bytes
	if n == 1 {
		s.add(0, Step{Kind: Copy, Buf: Out, Len: b, From: In})
		return s
	}
	v := vrankOf(l.Rank, l.Root, n)
	nd := treeNode(shape, fanout, v, n)
	if len(nd.children) == 0 {
		s.add(0, Step{Kind: Send, Peer: rankOf(nd.parent, l.Root, n), Buf: In, Len: b})
		return s
	}
	s.TmpSize = nd.span * b
	for _, c := range nd.children {
		span := treeNode(shape, fanout, c, n).span
		s.add(0, Step{Kind: Recv, Peer: rankOf(c, l.Root, n), Buf: Tmp, Off: (c - v) * b, Len: span * b})
	}
	s.add(0, Step{Kind: Copy, Buf: Tmp, Len: b, From: In})
	if nd.parent >= 0 {
		s.add(1, Step{Kind: Send, Peer: rankOf(nd.parent, l.Root, n), Buf: Tmp, Len: nd.span * b})
		return s
	}
	// Back from vrank order to rank order.
	first := (n - l.Root) * b
	s.add(1, Step{Kind: Copy, Buf: Out, Off: l.Root * b, Len: first, From: Tmp},
		Step{Kind: Copy, Buf: Out, Len: l.Root * b, From: Tmp, FromOff: first})
	return s
}
