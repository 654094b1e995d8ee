package coll

import (
	"fmt"
	"testing"
)

// TestTreeInvariants checks what the scatter, gather and non-commutative
// reduction schedules rely on, for every shape and size: one root, each
// node's children in increasing order with contiguous subtrees that tile
// the node's span, parent and child links agreeing.
func TestTreeInvariants(t *testing.T) {
	for _, tc := range []struct {
		shape  Shape
		fanout int
	}{{Flat, 0}, {Chain, 0}, {Binary, 0}, {Binomial, 0}, {Knomial, 3}, {Knomial, 4}, {Knomial, 8}} {
		for n := 1; n <= 40; n++ {
			t.Run(fmt.Sprintf("%s-k%d-n%d", tc.shape, tc.fanout, n), func(t *testing.T) {
				nodes := make([]node, n)
				for v := range nodes {
					nodes[v] = treeNode(tc.shape, tc.fanout, v, n)
				}
				if nodes[0].parent != -1 || nodes[0].span != n {
					t.Fatalf("root: %+v", nodes[0])
				}
				for v, nd := range nodes {
					if v > 0 && (nd.parent < 0 || nd.parent >= v) {
						t.Fatalf("vrank %d: parent %d", v, nd.parent)
					}
					next := v + 1
					for _, c := range nd.children {
						if c != next {
							t.Fatalf("vrank %d: children %v do not tile from %d", v, nd.children, next)
						}
						if nodes[c].parent != v {
							t.Fatalf("vrank %d: child %d has parent %d", v, c, nodes[c].parent)
						}
						next += nodes[c].span
					}
					if next != v+nd.span {
						t.Fatalf("vrank %d: span %d, children cover to %d", v, nd.span, next)
					}
				}
			})
		}
	}
}

// TestTreeDepth checks the shapes' depths, the property their costs rest
// on (seed 001 §3.1).
func TestTreeDepth(t *testing.T) {
	depth := func(shape Shape, k, n int) int {
		d := 0
		for v := 0; v < n; v++ {
			h := 0
			for u := v; u != 0; u = treeNode(shape, k, u, n).parent {
				h++
			}
			d = max(d, h)
		}
		return d
	}
	tests := []struct {
		shape Shape
		k, n  int
		want  int
	}{
		{Flat, 0, 17, 1}, {Chain, 0, 17, 16}, {Binary, 0, 15, 3}, {Binary, 0, 16, 4},
		{Binomial, 0, 16, 4}, {Binomial, 0, 17, 4}, {Binomial, 0, 32, 5}, {Knomial, 4, 16, 2}, {Knomial, 4, 17, 2}, {Knomial, 4, 64, 3}, {Knomial, 3, 27, 3},
	}
	for _, tc := range tests {
		if got := depth(tc.shape, tc.k, tc.n); got != tc.want {
			t.Errorf("%s k=%d n=%d: depth %d, want %d", tc.shape, tc.k, tc.n, got, tc.want)
		}
	}
}
