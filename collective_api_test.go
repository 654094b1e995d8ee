package commtune

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/config"
)

// TestCollectivesVector runs the v-variants through the public API with
// uneven counts (some zero) and gapped displacements.
func TestCollectivesVector(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			counts, displs := make([]int, n), make([]int, n)
			total := 0
			for r := range counts {
				counts[r] = (r * 3) % 4 * 5
				displs[r] = total + r%2
				total = displs[r] + counts[r]
			}
			val := func(r, i int) int64 { return int64(r*1000 + i) }
			err := Local(n, func(c *Comm) error {
				ctx := context.Background()
				me := c.Rank()
				mine := make([]int64, counts[me])
				for i := range mine {
					mine[i] = val(me, i)
				}
				full := make([]int64, total)
				for r := 0; r < n; r++ {
					for i := 0; i < counts[r]; i++ {
						full[displs[r]+i] = val(r, i)
					}
				}
				for root := 0; root < n; root++ {
					got := make([]int64, counts[me])
					var send []int64
					if me == root {
						send = full
					}
					if err := Scatterv(ctx, c, send, counts, displs, got, root); err != nil {
						return err
					}
					if !slices.Equal(got, mine) {
						return fmt.Errorf("scatterv root %d: rank %d got %v", root, me, got)
					}
					all := make([]int64, total)
					if err := Gatherv(ctx, c, mine, all, counts, displs, root); err != nil {
						return err
					}
					if me == root && !slices.Equal(all, full) {
						return fmt.Errorf("gatherv root %d: %v, want %v", root, all, full)
					}
				}
				all := make([]int64, total)
				if err := Allgatherv(ctx, c, mine, all, counts, displs); err != nil {
					return err
				}
				if !slices.Equal(all, full) {
					return fmt.Errorf("allgatherv: rank %d has %v, want %v", me, all, full)
				}
				// Alltoallv: rank s sends rank d (s+d)%3 elements.
				cnt := func(s, d int) int { return (s + d) % 3 }
				sc, sd, rc, rd := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
				var send, want []int64
				for d := 0; d < n; d++ {
					sc[d], sd[d] = cnt(me, d), len(send)
					for i := 0; i < sc[d]; i++ {
						send = append(send, int64(me*100+d*10+i))
					}
					rc[d], rd[d] = cnt(d, me), len(want)
					for i := 0; i < rc[d]; i++ {
						want = append(want, int64(d*100+me*10+i))
					}
				}
				got := make([]int64, len(want))
				if err := Alltoallv(ctx, c, send, sc, sd, got, rc, rd); err != nil {
					return err
				}
				if !slices.Equal(got, want) {
					return fmt.Errorf("alltoallv: rank %d has %v, want %v", me, got, want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCollectivesInPlace passes the same slice as send and receive buffer.
func TestCollectivesInPlace(t *testing.T) {
	err := Local(4, func(c *Comm) error {
		ctx := context.Background()
		for _, alg := range coll.Algorithms(coll.OpAllreduce) {
			v := []int32{int32(c.Rank()), 1, 2}
			if err := Allreduce(ctx, c, v, v, Sum, WithAlgorithm(alg.Name())); err != nil {
				return err
			}
			if want := []int32{6, 4, 8}; !slices.Equal(v, want) {
				return fmt.Errorf("%s in place: %v, want %v", alg.Name(), v, want)
			}
		}
		v := make([]float64, 8)
		v[2*c.Rank()], v[2*c.Rank()+1] = float64(c.Rank()), 0.5
		if err := Allgather(ctx, c, v[2*c.Rank():2*c.Rank()+2], v); err != nil {
			return err
		}
		if want := []float64{0, .5, 1, .5, 2, .5, 3, .5}; !slices.Equal(v, want) {
			return fmt.Errorf("allgather in place: %v", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBarrierWaits: no rank leaves a barrier before the last one enters,
// for each barrier algorithm.
func TestBarrierWaits(t *testing.T) {
	for _, alg := range coll.Algorithms(coll.OpBarrier) {
		t.Run(strings.ReplaceAll(alg.Name(), "/", "-"), func(t *testing.T) {
			const n = 5
			entered := make(chan int, n)
			err := Local(n, func(c *Comm) error {
				if c.Rank() == n-1 {
					time.Sleep(20 * time.Millisecond)
				}
				entered <- c.Rank()
				if err := c.Barrier(context.Background(), WithAlgorithm(alg.Name())); err != nil {
					return err
				}
				if len(entered) != n {
					return fmt.Errorf("rank %d left the barrier with %d of %d ranks in", c.Rank(), len(entered), n)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// first is a non-commutative operation: the lowest rank's value wins.
var first = NewOp("first", func(a, b int64) int64 { return a }, false)

// TestCollectiveErrors: bad arguments get a clear error before anything
// is sent; forcing a reordering algorithm on a non-commutative operation
// is refused; ranks disagreeing on sizes get ErrSizeMismatch or
// ErrTruncate, not a hang.
func TestCollectiveErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		call func(c *Comm) error
		want string
	}{
		{"bad root", func(c *Comm) error { return Bcast(ctx, c, []int{1}, 5) }, "root 5 out of range"},
		{"short recv", func(c *Comm) error { return Allreduce(ctx, c, []int{1, 2}, []int{0}, Sum) }, "receive buffer of 1 elements for 2"},
		{"allgather size", func(c *Comm) error { return Allgather(ctx, c, []int{1}, []int{0}) }, "want 2 ranks × 1"},
		{"alltoall size", func(c *Comm) error { return Alltoall(ctx, c, []int{1, 2, 3}, []int{0, 0, 0}) }, "equal multiples of 2 ranks"},
		{"unknown algorithm", func(c *Comm) error { return Bcast(ctx, c, []int{1}, 0, WithAlgorithm("binomial:seg=3K")) }, "want none or a power of two"},
		{"wrong family", func(c *Comm) error { return Bcast(ctx, c, []int{1}, 0, WithAlgorithm("ring")) }, `no family "ring"`},
		{"bitwise on floats", func(c *Comm) error { return Allreduce(ctx, c, []float64{1}, []float64{0}, BXor) }, "bxor is not defined on float64"},
		{"user op type", func(c *Comm) error { return Allreduce(ctx, c, []int32{1}, []int32{0}, first) }, `"first" combines int64, not int32`},
		{"zero op", func(c *Comm) error { return Allreduce(ctx, c, []int32{1}, []int32{0}, Op{}) }, "zero Op"},
		{"forced ring, non-commutative", func(c *Comm) error {
			return Allreduce(ctx, c, []int64{1}, []int64{0}, first, WithAlgorithm("ring"))
		}, "needs a commutative operation"},
		{"counts", func(c *Comm) error { return Allgatherv(ctx, c, []int{1}, []int{0}, []int{1}, []int{0}) }, "1 counts and 1 displacements for 2 ranks"},
		{"block outside", func(c *Comm) error {
			return Allgatherv(ctx, c, []int{1}, []int{0, 0}, []int{1, 1}, []int{0, 2})
		}, "lies outside the receive buffer of 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Local(2, func(c *Comm) error {
				err := tc.call(c)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					return fmt.Errorf("rank %d: error %v, want %q", c.Rank(), err, tc.want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	// Ranks disagreeing on a broadcast's size: every rank errs, the root,
	// whose part was done when it sent, in its next call. The first
	// disagreement has rank 1 expect more than rank 0 sends, the second
	// less; each leaves its communicator out of step, so later calls on it
	// fail too. With messages, rank 1 finds rank 0's message under another
	// signature among those waiting (the root may have gone on computing);
	// with the lottery, sizes in different size classes are different
	// keys, so rank 1 waits for a draw rank 0 never makes, and the
	// signature watch ends the wait once rank 0 waits too, in its barrier;
	// goroutine ranks compare their calls as they meet.
	for _, tc := range []struct {
		name string
		opt  Option
	}{
		{"ranks disagree/messages", withMessages},
		{"ranks disagree/lottery", withLottery},
		{"ranks disagree/direct", withTable},
	} {
		for _, more := range []int{1, -1} {
			t.Run(fmt.Sprintf("%s/%+d", tc.name, more), func(t *testing.T) {
				err := Local(2, func(c *Comm) error {
					buf := make([]int, 4+more*c.Rank())
					err := Bcast(ctx, c, buf, 0)
					if c.Rank() == 0 && err == nil {
						err = c.Barrier(ctx) // rank 1 does not come: rank 0 learns why
					}
					if !errors.Is(err, ErrSizeMismatch) && !errors.Is(err, ErrTruncate) {
						return fmt.Errorf("rank %d: %v, want ErrSizeMismatch or ErrTruncate", c.Rank(), err)
					}
					if err := Bcast(ctx, c, make([]int, 4), 0); !errors.Is(err, ErrSizeMismatch) && !errors.Is(err, ErrTruncate) {
						return fmt.Errorf("rank %d: a call after the disagreement: %v, want the same error", c.Rank(), err)
					}
					return nil
				}, tc.opt)
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestForcedCollectives: COMMTUNE_COLL_<OP> picks the algorithm, a bad one
// fails Init's configuration, and a forced reordering algorithm yields to
// the table for a non-commutative operation.
func TestForcedCollectives(t *testing.T) {
	env := func(vals map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vals[k]; return v, ok }
	}
	c, err := config.Build(env(map[string]string{"COMMTUNE_COLL_BCAST": "knomial:k=3:seg=4K", "COMMTUNE_COLL_ALLREDUCE": "ring"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := c.Forced(coll.OpBcast); a.Name() != "bcast/knomial/k=3/seg=4K" {
		t.Fatalf("forced bcast %q", a.Name())
	}
	if _, err := config.Build(env(map[string]string{"COMMTUNE_COLL_BCAST": "ring"}), nil); err == nil || !strings.Contains(err.Error(), "COMMTUNE_COLL_BCAST") {
		t.Fatalf("bad forced algorithm: %v", err)
	}
	err = Local(3, func(cm *Comm) error {
		a, auto, err := cm.in.Algorithm(coll.OpAllreduce, 1<<20, true, comm.Options{})
		if err != nil || a.Name() != "allreduce/ring" || auto {
			return fmt.Errorf("commutative: %v %v (auto %v)", a, err, auto)
		}
		// The table's choice: goroutine ranks read each other's buffers.
		a, auto, err = cm.in.Algorithm(coll.OpAllreduce, 1<<20, false, comm.Options{})
		if err != nil || a.Name() != "allreduce/direct" || auto {
			return fmt.Errorf("non-commutative: %v %v (auto %v)", a, err, auto)
		}
		v := []int64{int64(cm.Rank() + 7)}
		if err := Allreduce(context.Background(), cm, v, v, first); err != nil {
			return err
		}
		if v[0] != 7 {
			return fmt.Errorf("non-commutative with ring forced: %d, want rank 0's 7", v[0])
		}
		return nil
	}, func(c *Config) { c.Collectives = map[string]string{"allreduce": "ring"} })
	if err != nil {
		t.Fatal(err)
	}
}

// TestNonblockingCollectives keeps several calls in flight on one
// communicator, with different algorithms and operations, and waits for
// them in reverse order.
func TestNonblockingCollectives(t *testing.T) {
	const n, calls = 5, 8
	err := Local(n, func(c *Comm) error {
		ctx := context.Background()
		algs := coll.Algorithms(coll.OpAllreduce)
		sums := make([][]int64, calls)
		var reqs []*CollRequest
		for i := 0; i < calls; i++ {
			send := []int64{int64(c.Rank() * i), int64(i)}
			sums[i] = make([]int64, 2)
			q, err := Iallreduce(ctx, c, send, sums[i], Sum, WithAlgorithm(algs[(i*7)%len(algs)].Name()))
			if err != nil {
				return err
			}
			reqs = append(reqs, q)
		}
		buf := make([]float32, 3)
		if c.Rank() == 2 {
			buf = []float32{1, 2, 3}
		}
		qb, err := Ibcast(ctx, c, buf, 2)
		if err != nil {
			return err
		}
		qbar, err := c.Ibarrier(ctx)
		if err != nil {
			return err
		}
		reqs = append(reqs, qb, qbar)
		for i := len(reqs) - 1; i >= 0; i-- {
			if err := reqs[i].Wait(ctx); err != nil {
				return err
			}
		}
		for i, s := range sums {
			if want := []int64{int64(i * n * (n - 1) / 2), int64(i * n)}; !slices.Equal(s, want) {
				return fmt.Errorf("call %d: %v, want %v", i, s, want)
			}
		}
		if done, err := qb.Test(); !done || err != nil || !slices.Equal(buf, []float32{1, 2, 3}) {
			return fmt.Errorf("ibcast: done %v, %v, %v", done, err, buf)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
