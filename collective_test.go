package commtune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/commtune/commtune/internal/coll"
)

// elemCase is an element type with a generator of rank r's element i in
// case k, and a reduction with its sequential definition.
type elemCase[T Number] struct {
	name    string
	gen     func(k, r, i int) T
	op      Op
	combine func(a, b T) T
}

// affineMap is a non-commutative, associative operation: the map
// x → m·x + c (m in the high 32 bits, c in the low), a ⊕ b = "a, then b".
func affineMap(a, b uint64) uint64 {
	ma, ca := uint32(a>>32), uint32(a)
	mb, cb := uint32(b>>32), uint32(b)
	return uint64(mb*ma)<<32 | uint64(mb*ca+cb)
}

var (
	int32Sum = elemCase[int32]{"int32/sum", func(k, r, i int) int32 { return int32(k*7919 + r*104729 + i*31) }, Sum,
		func(a, b int32) int32 { return a + b }}
	float64Max = elemCase[float64]{"float64/max", func(k, r, i int) float64 { return float64((k*37+r*101+i*13)%997) / 4 }, Max,
		func(a, b float64) float64 { return math.Max(a, b) }}
	uint8Xor = elemCase[uint8]{"uint8/bxor", func(k, r, i int) uint8 { return uint8(k*3 + r*29 + i*7) }, BXor,
		func(a, b uint8) uint8 { return a ^ b }}
	affineOp  = NewOp("affine", affineMap, false)
	affineNon = elemCase[uint64]{"affine/noncommutative", func(k, r, i int) uint64 {
		return uint64(2*(k+r+i)+1)<<32 | uint64(k*5+r*3+i)
	}, affineOp, affineMap}
)

// checkCall runs one call of op with algorithm alg and compares every
// rank's result with the sequential reference. count is the number of
// elements per rank (the vector for bcast and reductions, one block
// otherwise).
func checkCall[T Number](ctx context.Context, c *Comm, ec elemCase[T], op coll.Operation, alg string, k, root, count int) error {
	n, me := c.Size(), c.Rank()
	input := func(r, length int) []T {
		s := make([]T, length)
		for i := range s {
			s[i] = ec.gen(k, r, i)
		}
		return s
	}
	opt := WithAlgorithm(alg)
	var got, want []T
	switch op {
	case coll.OpBcast:
		got = make([]T, count)
		if me == root {
			got = input(root, count)
		}
		want = input(root, count)
		if err := Bcast(ctx, c, got, root, opt); err != nil {
			return err
		}
	case coll.OpReduce, coll.OpAllreduce:
		send := input(me, count)
		got = make([]T, count)
		want = input(0, count)
		for r := 1; r < n; r++ {
			for i, v := range input(r, count) {
				want[i] = ec.combine(want[i], v)
			}
		}
		var err error
		if op == coll.OpReduce {
			err = Reduce(ctx, c, send, got, ec.op, root, opt)
			if me != root {
				want = got
			}
		} else {
			err = Allreduce(ctx, c, send, got, ec.op, opt)
		}
		if err != nil {
			return err
		}
	case coll.OpScatter:
		var send []T
		if me == root {
			send = input(root, n*count)
		}
		got = make([]T, count)
		want = input(root, n*count)[me*count : (me+1)*count]
		if err := Scatter(ctx, c, send, got, root, opt); err != nil {
			return err
		}
	case coll.OpGather, coll.OpAllgather:
		for r := 0; r < n; r++ {
			want = append(want, input(r, count)...)
		}
		got = make([]T, n*count)
		var err error
		if op == coll.OpGather {
			err = Gather(ctx, c, input(me, count), got, root, opt)
			if me != root {
				want = got
			}
		} else {
			err = Allgather(ctx, c, input(me, count), got, opt)
		}
		if err != nil {
			return err
		}
	case coll.OpAlltoall:
		got = make([]T, n*count)
		for s := 0; s < n; s++ {
			want = append(want, input(s, n*count)[me*count:(me+1)*count]...)
		}
		if err := Alltoall(ctx, c, input(me, n*count), got, opt); err != nil {
			return err
		}
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("rank %d: result differs from the reference", me)
	}
	return nil
}

// inprocAlgorithms are the algorithms the in-process matrix runs: all,
// with the segment sizes that split its messages (the schedule matrix
// covers the rest).
func inprocAlgorithms(op coll.Operation) []coll.Algorithm {
	var out []coll.Algorithm
	for _, a := range coll.Algorithms(op) {
		if a.Segment == 0 || a.Segment == 1<<10 || a.Segment == 4<<10 {
			out = append(out, a)
		}
	}
	return out
}

// TestCollectivesInproc runs every algorithm through the public API on
// goroutine ranks, 1 to 17 of them, every root (first, second, middle and
// last beyond 4 ranks), empty to many-segment vectors, with reductions of
// 1-, 4- and 8-byte elements including a non-commutative one — meant for
// -race, which watches the engine's buffers and the schedules' rounds.
func TestCollectivesInproc(t *testing.T) {
	ops := []coll.Operation{coll.OpBcast, coll.OpReduce, coll.OpAllreduce, coll.OpScatter, coll.OpGather, coll.OpAllgather, coll.OpAlltoall}
	for n := 1; n <= 17; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			err := Local(n, func(c *Comm) error {
				ctx := context.Background()
				k := 0
				for _, op := range ops {
					roots := []int{0}
					if op == coll.OpBcast || op == coll.OpReduce || op == coll.OpScatter || op == coll.OpGather {
						roots = []int{0, 1, n / 2, n - 1}
					}
					reduction := op == coll.OpReduce || op == coll.OpAllreduce
					for _, a := range inprocAlgorithms(op) {
						for _, root := range slices.Compact(slices.Sorted(slices.Values(roots))) {
							if root >= n {
								continue
							}
							for _, count := range []int{0, 1, 7, 1024, 5*1024 + 3} {
								k++
								run := func(err error) error {
									if err != nil && !(errors.Is(err, ErrNotCommutative) && a.Commutative()) {
										return fmt.Errorf("%s root=%d count=%d: %w", a.Name(), root, count, err)
									}
									return nil
								}
								if err := run(checkCall(ctx, c, uint8Xor, op, a.Name(), k, root, count)); err != nil {
									return err
								}
								if !reduction {
									continue
								}
								if err := run(checkCall(ctx, c, int32Sum, op, a.Name(), k, root, count/4)); err != nil {
									return err
								}
								if err := run(checkCall(ctx, c, float64Max, op, a.Name(), k, root, count/8)); err != nil {
									return err
								}
								err := checkCall(ctx, c, affineNon, op, a.Name(), k, root, count/8)
								if a.Commutative() && !errors.Is(err, ErrNotCommutative) || !a.Commutative() && err != nil {
									return fmt.Errorf("%s root=%d count=%d non-commutative: %v", a.Name(), root, count/8, err)
								}
							}
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
