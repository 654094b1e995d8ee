package launch

import (
	"slices"
	"testing"
)

// TestNodeBlock: pretend nodes are blocks of consecutive ranks, the first
// n mod nodes of them one rank larger, covering every rank once.
func TestNodeBlock(t *testing.T) {
	tests := []struct {
		n, nodes int
		want     []int // each rank's node
	}{
		{4, 2, []int{0, 0, 1, 1}},
		{5, 2, []int{0, 0, 0, 1, 1}},
		{7, 3, []int{0, 0, 0, 1, 1, 2, 2}},
		{3, 3, []int{0, 1, 2}},
		{6, 1, []int{0, 0, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		var got []int
		for r := range tc.n {
			node, first, size := nodeBlock(r, tc.n, tc.nodes)
			got = append(got, node)
			if r < first || r >= first+size {
				t.Errorf("n=%d nodes=%d: rank %d outside its block [%d, %d)", tc.n, tc.nodes, r, first, first+size)
			}
			if first > 0 {
				if prev, _, _ := nodeBlock(first-1, tc.n, tc.nodes); prev != node-1 {
					t.Errorf("n=%d nodes=%d: rank %d before node %d's block is on node %d", tc.n, tc.nodes, first-1, node, prev)
				}
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("n=%d nodes=%d: nodes %v, want %v", tc.n, tc.nodes, got, tc.want)
		}
	}
}

// TestNodeCPUs: each pretend node gets its own share of the processors,
// none shared; with fewer processors than nodes, all of them.
func TestNodeCPUs(t *testing.T) {
	tests := []struct {
		cpus  []int
		nodes int
		want  [][]int
	}{
		{[]int{0, 1}, 2, [][]int{{0}, {1}}},
		{[]int{0, 1, 2, 3, 4}, 2, [][]int{{0, 1}, {2, 3, 4}}},
		{[]int{2, 5, 7}, 3, [][]int{{2}, {5}, {7}}},
		{[]int{0, 1}, 3, [][]int{nil, nil, nil}},
	}
	for _, tc := range tests {
		for i := range tc.nodes {
			if got := nodeCPUs(tc.cpus, i, tc.nodes); !slices.Equal(got, tc.want[i]) {
				t.Errorf("cpus %v, %d nodes: node %d gets %v, want %v", tc.cpus, tc.nodes, i, got, tc.want[i])
			}
		}
	}
}
