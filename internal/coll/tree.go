package coll

import "fmt"

// Shape is a tree's form (seed 001 §3.1). Ranks are placed on a tree by
// their vrank, (rank − root) mod n, so that the root is vrank 0.
type Shape string

const (
	Flat     Shape = "flat"     // the root talks to every rank ("sequential")
	Chain    Shape = "chain"    // each vrank to the next
	Binary   Shape = "binary"   // two children each
	Binomial Shape = "binomial" // MPICH's tree: children at vrank + 2^k
	Knomial  Shape = "knomial"  // children at vrank + d·k^j, d < k
)

// node is one vrank's place in a tree. Every shape here gives each node a
// contiguous subtree, [vrank, vrank+span), and children in increasing
// vrank order whose subtrees tile [vrank+1, vrank+span): scatter and
// gather move a subtree's blocks as one piece, and a reduction that
// combines a node's value with its children's results in that order
// combines ranks in order — what a non-commutative operation needs.
type node struct {
	parent   int // vrank; −1 at the root
	children []int
	span     int
}

// treeNode places vrank v in a tree of n vranks. fanout is k for Knomial.
func treeNode(shape Shape, fanout, v, n int) node {
	switch shape {
	case Flat:
		if v == 0 {
			nd := node{parent: -1, span: n}
			for c := 1; c < n; c++ {
				nd.children = append(nd.children, c)
			}
			return nd
		}
		return node{parent: 0, span: 1}
	case Chain:
		nd := node{parent: v - 1, span: n - v}
		if v+1 < n {
			nd.children = []int{v + 1}
		}
		return nd
	case Binary:
		return binaryNode(v, 0, n, -1)
	case Binomial:
		return knomialNode(2, v, n)
	case Knomial:
		return knomialNode(max(fanout, 2), v, n)
	}
	panic(fmt.Sprintf("coll: unknown tree shape %q", shape))
}

// binaryNode finds v in the binary tree over [lo, hi) rooted at lo: the
// rest of the range is halved, the first half under lo+1 and the second
// under its first vrank. Subtrees are contiguous and the depth is
// ⌈log2 n⌉.
func binaryNode(v, lo, hi, parent int) node {
	for {
		rest := hi - lo - 1
		mid := lo + 1 + (rest+1)/2 // first vrank of the second half
		if v == lo {
			nd := node{parent: parent, span: hi - lo}
			if rest > 0 {
				nd.children = append(nd.children, lo+1)
			}
			if mid < hi {
				nd.children = append(nd.children, mid)
			}
			return nd
		}
		parent = lo
		if v < mid {
			lo, hi = lo+1, mid
		} else {
			lo = mid
		}
	}
}

// knomialNode places v in the k-nomial tree: a vrank's lowest non-zero
// base-k digit, d·k^j, links it to its parent v − d·k^j; its children are
// v + d'·k^i for every i < j and d' < k, and its subtree spans k^j vranks.
// k = 2 is the binomial tree.
func knomialNode(k, v, n int) node {
	place := 1 // k^j of v's lowest non-zero digit
	for v != 0 && (v/place)%k == 0 {
		place *= k
	}
	nd := node{parent: -1, span: n}
	if v != 0 {
		nd.parent = v - (v/place)%k*place
		nd.span = min(place, n-v)
	}
	for p := 1; p < n && (v == 0 || p < place); p *= k {
		for d := 1; d < k; d++ {
			if c := v + d*p; c < n {
				nd.children = append(nd.children, c)
			}
		}
	}
	return nd
}

// rankOf and vrankOf convert between a rank and its place in a tree rooted
// at root.
func rankOf(v, root, n int) int  { return (v + root) % n }
func vrankOf(r, root, n int) int { return (r - root + n) % n }

// bySpan returns children ordered by decreasing subtree size: a root sends
// to the largest subtree first, so that every rank receives at about the
// same time (seed 001 §3.1, binomial).
func bySpan(shape Shape, fanout, n int, children []int) []int {
	out := append([]int(nil), children...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && treeNode(shape, fanout, out[j], n).span > treeNode(shape, fanout, out[j-1], n).span; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
