package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
)

// TestLocal runs the suite on goroutine ranks (the in-process driver).
func TestLocal(t *testing.T) {
	for _, tc := range Cases() {
		for _, n := range []int{1, 2, 3, 4} {
			if n < tc.MinRanks {
				continue
			}
			t.Run(fmt.Sprintf("%s/n=%d", tc.Name, n), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				if err := commtune.Local(n, func(c *commtune.Comm) error { return tc.Run(ctx, c) }); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestStressLocal runs the stress workload on 4 goroutine ranks; the full
// 200 000-message run over processes is TestStressProcesses.
func TestStressLocal(t *testing.T) {
	msgs := 20000
	if testing.Short() {
		msgs = 4000
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := commtune.Local(4, func(c *commtune.Comm) error {
		rep, err := Stress(ctx, c, StressConfig{Messages: msgs, MaxSize: 256 << 10, Seed: 42})
		if c.Rank() == 0 {
			t.Logf("rank 0: %+v", rep)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCollectivesInproc runs every collective algorithm through the public
// API on goroutine ranks, 1 to 17 of them, roots first, second, middle and
// last, empty to many-segment vectors (segments of none, 1K and 4K; the
// schedule matrix in internal/coll covers every segment size and root),
// with reductions of 1-, 4- and 8-byte elements including a
// non-commutative one — meant for -race, which watches the engine's
// buffers and the schedules' rounds.
func TestCollectivesInproc(t *testing.T) {
	m := CollectiveMatrix{
		Ops: []coll.Operation{coll.OpBcast, coll.OpReduce, coll.OpAllreduce, coll.OpScatter, coll.OpGather, coll.OpAllgather, coll.OpAlltoall},
		Algorithms: func(op coll.Operation) []coll.Algorithm {
			var out []coll.Algorithm
			for _, a := range coll.Algorithms(op) {
				if a.Segment == 0 || a.Segment == 1<<10 || a.Segment == 4<<10 {
					out = append(out, a)
				}
			}
			return out
		},
		Roots:  RootsSample,
		Counts: []int{0, 1, 7, 1024, 5*1024 + 3},
	}
	for n := 1; n <= 17; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var calls int
			err := commtune.Local(n, func(c *commtune.Comm) error {
				k, err := CheckCollectives(context.Background(), c, m)
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
