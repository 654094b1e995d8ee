package coll

// bcastSchedule sends the root's Out to every rank's Out down a tree, in
// segments of seg bytes (0: whole): a rank forwards segment i to its
// children while it receives segment i+1 (seed 001 §3.2's pipeline).
func bcastSchedule(l Layout, shape Shape, fanout, seg int) Schedule {
	var s Schedule
	n := l.Size
	if n == 1 {
		return s
	}
	v := vrankOf(l.Rank, l.Root, n)
	nd := treeNode(shape, fanout, v, n)
	kids := bySpan(shape, fanout, n, nd.children)
	segs := segments(l.Bytes, seg, l.Elem)
	send := func(r int, sg [2]int) {
		for _, c := range kids {
			s.add(r, Step{Kind: Send, Peer: rankOf(c, l.Root, n), Buf: Out, Off: sg[0], Len: sg[1]})
		}
	}
	if nd.parent < 0 {
		for i, sg := range segs {
			send(i, sg)
		}
		return s
	}
	parent := rankOf(nd.parent, l.Root, n)
	for i, sg := range segs {
		s.add(i, Step{Kind: Recv, Peer: parent, Buf: Out, Off: sg[0], Len: sg[1]})
		if len(kids) > 0 {
			send(i+1, sg)
		}
	}
	return s
}
