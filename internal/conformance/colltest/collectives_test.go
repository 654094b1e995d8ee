package colltest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/testenv"
)

// TestCollectivesInproc runs every collective algorithm through the public
// API on goroutine ranks, 1 to 17 of them, roots first, second, middle and
// last, empty to many-segment vectors (segments of none, 1K and 4K; the
// schedule matrix in internal/coll covers every segment size and root),
// with reductions of 1-, 4- and 8-byte elements including a
// non-commutative one — meant for -race, which watches the engine's
// buffers and the schedules' rounds. Under the race detector it takes the
// sizes whose trees and pairings differ in shape (1 to 5, 8, 13, 16, 17):
// each rank runs 5 to 20 times slower there.
func TestCollectivesInproc(t *testing.T) {
	m := conformance.CollectiveMatrix{
		Ops: conformance.CollectiveOps,
		Algorithms: func(op coll.Operation) []coll.Algorithm {
			var out []coll.Algorithm
			for _, a := range coll.Algorithms(op) {
				if a.Segment == 0 || a.Segment == 1<<10 || a.Segment == 4<<10 {
					out = append(out, a)
				}
			}
			return out
		},
		Roots:  conformance.RootsSample,
		Counts: []int{0, 1, 7, 1024, 5*1024 + 3},
	}
	for n := 1; n <= 17; n++ {
		if testenv.Reduced() && n > 5 && n != 8 && n != 13 && n != 16 && n != 17 {
			continue
		}
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var calls int
			err := commtune.Local(n, func(c *commtune.Comm) error {
				k, err := conformance.CheckCollectives(context.Background(), c, m)
				if c.Rank() == 0 {
					calls = k
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d ranks: %d calls", n, calls)
		})
	}
}

// processMatrix is the subset of the collective matrix run over
// processes: every operation and family, segments of none and 1K on
// vectors up to a few segments ("small"), or whole and 64K-segmented
// 1 MiB vectors ("large").
func processMatrix(which string) conformance.CollectiveMatrix {
	if strings.HasPrefix(which, "nodes") {
		return nodesMatrix()
	}
	segs, counts := []int{0, 1 << 10}, []int{0, 1, 7, 5*1024 + 3}
	if which == "large" {
		segs, counts = []int{0, 64 << 10}, []int{1 << 20}
	}
	return conformance.CollectiveMatrix{
		Ops: conformance.CollectiveOps,
		Algorithms: func(op coll.Operation) []coll.Algorithm {
			var out []coll.Algorithm
			for _, a := range coll.Algorithms(op) {
				if slices.Contains(segs, a.Segment) {
					out = append(out, a)
				}
			}
			return out
		},
		Roots:  func(n int) []int { return []int{0, n - 1} },
		Counts: counts,
	}
}

// nodesMatrix is the matrix run on pretend nodes: the hierarchical
// algorithms, every root, beside a family that ignores the nodes, and the
// table's choice.
func nodesMatrix() conformance.CollectiveMatrix {
	return conformance.CollectiveMatrix{
		Ops: []coll.Operation{coll.OpBcast, coll.OpReduce, coll.OpAllreduce},
		Algorithms: func(op coll.Operation) []coll.Algorithm {
			h, _ := coll.HierarchicalAlgorithm(op)
			return []coll.Algorithm{h, coll.Algorithms(op)[0], h}
		},
		Roots:  allRanks,
		Counts: []int{0, 1, 7, 1024, 5*1024 + 3},
	}
}

// allRanks is 0 to n-1.
func allRanks(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestCollectivesNodes runs the hierarchical algorithms on processes of
// pretend nodes (shared memory within each, TCP between them): nodes of
// one, two and three ranks, the root on each, the barrier made to wait for
// a late rank, and what the table and the lottery choose.
func TestCollectivesNodes(t *testing.T) {
	for _, tc := range []struct {
		n, nodes int
		lottery  bool
	}{{3, 2, false}, {4, 2, false}, {5, 2, false}, {6, 3, false}, {4, 4, false}, {4, 2, true}} {
		if testenv.Reduced() && tc.n != 4 {
			continue
		}
		which, env := "nodes", []string{"COMMTUNE_TRANSPORTS=shm,tcp"}
		if tc.lottery {
			which, env = "nodes-lottery", append(env, "COMMTUNE_COLL_SELECT=lottery")
		}
		t.Run(fmt.Sprintf("n=%d/nodes=%d/%s", tc.n, tc.nodes, which), func(t *testing.T) {
			t.Parallel()
			out, err := conformance.RunJobNodes(tc.n, tc.nodes, 0, "coll", which, env...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Log(out)
			if !strings.Contains(out, "collective calls checked") {
				t.Fatalf("no report:\n%s", out)
			}
		})
	}
}

// TestCollectivesProcesses runs a subset of the collective matrix over
// real processes on TCP and on shared memory, and on 16 ranks of one node
// over shared memory. Under the race detector, whose ranks run 20 times
// slower, the 3-rank jobs only: the drivers' goroutines are the same at
// every size.
func TestCollectivesProcesses(t *testing.T) {
	for _, tr := range conformance.Transports {
		for _, tc := range []struct {
			n     int
			which string
			only  string // transport, if not every one
		}{{3, "small", ""}, {4, "small", ""}, {4, "large", ""}, {16, "small", "shm"}} {
			if tc.only != "" && tc.only != tr.Name || testenv.Reduced() && tc.n != 3 {
				continue
			}
			t.Run(fmt.Sprintf("%s/n=%d/%s", tr.Name, tc.n, tc.which), func(t *testing.T) {
				out, err := conformance.RunJob(tc.n, "coll", tc.which, tr.Env)
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				t.Log(out)
				if !strings.Contains(out, "collective calls checked") {
					t.Fatalf("no report:\n%s", out)
				}
			})
		}
	}
}
