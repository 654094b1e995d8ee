package coll

// reduceSchedule combines every rank's In into the root's Out up a tree,
// in segments of seg bytes (0: whole): a rank receives segment i from its
// children and combines it while it sends segment i−1 to its parent.
//
// A rank combines its own contribution with its children's results in
// increasing vrank order, and every subtree is a contiguous vrank range,
// so each partial result covers consecutive vranks in order. With root 0
// that is rank order: a non-commutative operation is therefore reduced on
// the tree rooted at rank 0, which then sends the result to the root.
func reduceSchedule(l Layout, shape Shape, fanout, seg int, commutative bool) Schedule {
	var s Schedule
	n := l.Size
	if n == 1 {
		s.add(0, Step{Kind: Copy, Buf: Out, Len: l.Bytes, From: In})
		return s
	}
	treeRoot := l.Root
	if !commutative {
		treeRoot = 0
	}
	v := vrankOf(l.Rank, treeRoot, n)
	nd := treeNode(shape, fanout, v, n)
	segs := segments(l.Bytes, seg, l.Elem)
	maxSeg := segs[0][1]
	top := nd.parent < 0
	// Where this rank's partial result builds up. The first child's
	// segment lands there and this rank's own input joins it from In, on
	// the left: no copy of In first.
	acc, slots := Tmp, l.Bytes
	switch {
	case top && l.Rank == l.Root:
		acc, slots = Out, 0
	case len(nd.children) == 0:
		acc, slots = In, 0 // a leaf sends its own data as it is
	}
	s.TmpSize = slots + max(len(nd.children)-1, 0)*maxSeg
	for i := 0; i <= len(segs); i++ {
		if i < len(segs) {
			sg := segs[i]
			for j, c := range nd.children {
				if j == 0 {
					s.add(i, Step{Kind: Recv, Peer: rankOf(c, treeRoot, n), Buf: acc, Off: sg[0], Len: sg[1]})
				} else {
					s.add(i, Step{Kind: Recv, Peer: rankOf(c, treeRoot, n), Buf: Tmp, Off: slots + (j-1)*maxSeg, Len: sg[1]})
				}
			}
			if len(nd.children) > 0 {
				s.add(i, Step{Kind: Reduce, Buf: acc, Off: sg[0], Len: sg[1], From: In, FromOff: sg[0], FromFirst: true})
			}
			for j := 1; j < len(nd.children); j++ {
				s.add(i, Step{Kind: Reduce, Buf: acc, Off: sg[0], Len: sg[1], From: Tmp, FromOff: slots + (j-1)*maxSeg})
			}
		}
		if i >= 1 && !top {
			sg := segs[i-1]
			s.add(i, Step{Kind: Send, Peer: rankOf(nd.parent, treeRoot, n), Buf: acc, Off: sg[0], Len: sg[1]})
		}
	}
	if treeRoot != l.Root {
		r := s.next()
		switch l.Rank {
		case treeRoot:
			s.add(r, Step{Kind: Send, Peer: l.Root, Buf: acc, Len: l.Bytes})
		case l.Root:
			s.add(r, Step{Kind: Recv, Peer: treeRoot, Buf: Out, Len: l.Bytes})
		}
	}
	return s
}
