package coll

// barrierDissemination is the dissemination barrier: in round k each rank
// signals rank me+2^k and waits for rank me−2^k, ⌈log2 n⌉ rounds of one
// empty message each way, for any n.
func barrierDissemination(l Layout) Schedule {
	var s Schedule
	n, me := l.Size, l.Rank
	r := 0
	for d := 1; d < n; d *= 2 {
		s.add(r, Step{Kind: Recv, Peer: (me - d + n) % n}, Step{Kind: Send, Peer: (me + d) % n})
		r++
	}
	return s
}

// barrierTree gathers empty messages up a tree to rank 0 and sends them
// back down: 2·depth message latencies, but each rank sends only to its
// parent and children.
func barrierTree(l Layout, shape Shape, fanout int) Schedule {
	var s Schedule
	n := l.Size
	if n == 1 {
		return s
	}
	nd := treeNode(shape, fanout, l.Rank, n)
	up, down := 0, 1
	for _, c := range nd.children {
		s.add(up, Step{Kind: Recv, Peer: c})
	}
	if nd.parent >= 0 {
		s.add(up+1, Step{Kind: Send, Peer: nd.parent})
		s.add(up+2, Step{Kind: Recv, Peer: nd.parent})
		down = up + 3
	}
	for _, c := range nd.children {
		s.add(down, Step{Kind: Send, Peer: c})
	}
	return s
}
