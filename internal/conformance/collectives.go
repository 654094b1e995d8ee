package conformance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
)

// CollectiveMatrix says which collective calls CheckCollectives makes.
type CollectiveMatrix struct {
	Ops        []coll.Operation
	Algorithms func(coll.Operation) []coll.Algorithm
	// Roots lists the roots of rooted operations on n ranks.
	Roots func(n int) []int
	// Counts are the vector (or block) lengths in bytes; the 4- and 8-byte
	// element cases use as many whole elements as fit.
	Counts []int
}

// CheckCollectives makes every call of m on c, each rank checking its
// result against a sequential reference: uint8 with bxor for every
// operation, plus int32 sum, float64 max and a non-commutative operation
// for the reductions (reduce, allreduce, the reduce-scatters, scan and
// exscan), which the algorithms that reorder must refuse and the others
// must apply in rank order. It returns the number of calls made.
func CheckCollectives(ctx context.Context, c *commtune.Comm, m CollectiveMatrix) (int, error) {
	n, k := c.Size(), 0
	for _, op := range m.Ops {
		roots := []int{0}
		if op == coll.OpBcast || op == coll.OpReduce || op == coll.OpScatter || op == coll.OpGather {
			roots = m.Roots(n)
		}
		reduction := op.Reduces()
		for _, a := range m.Algorithms(op) {
			for _, root := range roots {
				for _, count := range m.Counts {
					k++
					where := func(err error) error {
						return fmt.Errorf("%s root=%d bytes=%d: %w", a.Name(), root, count, err)
					}
					if err := checkCall(ctx, c, uint8Xor, op, a.Name(), k, root, count); err != nil {
						return k, where(err)
					}
					if !reduction {
						continue
					}
					if err := checkCall(ctx, c, int32Sum, op, a.Name(), k, root, count/4); err != nil {
						return k, where(err)
					}
					if err := checkCall(ctx, c, float64Max, op, a.Name(), k, root, count/8); err != nil {
						return k, where(err)
					}
					err := checkCall(ctx, c, affineNon, op, a.Name(), k, root, count/8)
					if a.Commutative() && !errors.Is(err, commtune.ErrNotCommutative) || !a.Commutative() && err != nil {
						return k, where(fmt.Errorf("non-commutative operation: %v", err))
					}
				}
			}
		}
	}
	return k, nil
}

// CollectiveOps are the operations CheckCollectives checks: every one
// whose sizes follow from a count (not the v-variants, which have tests
// of their own).
var CollectiveOps = []coll.Operation{coll.OpBcast, coll.OpReduce, coll.OpAllreduce, coll.OpScatter, coll.OpGather, coll.OpAllgather,
	coll.OpAlltoall, coll.OpReduceScatterBlock, coll.OpReduceScatter, coll.OpScan, coll.OpExscan}

// RootsSample is the first, second, middle and last rank.
func RootsSample(n int) []int {
	return slices.Compact(slices.Sorted(slices.Values([]int{0, min(1, n-1), n / 2, n - 1})))
}

// elemCase is an element type with a generator of rank r's element i in
// case k, and a reduction with its sequential definition.
type elemCase[T commtune.Number] struct {
	name    string
	gen     func(k, r, i int) T
	op      commtune.Op
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
	int32Sum = elemCase[int32]{"int32/sum", func(k, r, i int) int32 { return int32(k*7919 + r*104729 + i*31) }, commtune.Sum,
		func(a, b int32) int32 { return a + b }}
	float64Max = elemCase[float64]{"float64/max", func(k, r, i int) float64 { return float64((k*37+r*101+i*13)%997) / 4 }, commtune.Max,
		func(a, b float64) float64 { return math.Max(a, b) }}
	uint8Xor = elemCase[uint8]{"uint8/bxor", func(k, r, i int) uint8 { return uint8(k*3 + r*29 + i*7) }, commtune.BXor,
		func(a, b uint8) uint8 { return a ^ b }}
	affineOp  = commtune.NewOp("affine", affineMap, false)
	affineNon = elemCase[uint64]{"affine/noncommutative", func(k, r, i int) uint64 {
		return uint64(2*(k+r+i)+1)<<32 | uint64(k*5+r*3+i)
	}, affineOp, affineMap}
)

// reduceScatterCounts are the blocks CheckCollectives gives the ranks of
// a ReduceScatter of a vector of about count elements on n ranks: uneven,
// every third empty.
func reduceScatterCounts(n, count int) []int {
	counts := make([]int, n)
	for r := range counts {
		counts[r] = count * ((r + 1) % 3) / n
	}
	return counts
}

// checkCall runs one call of op with algorithm alg and compares every
// rank's result with the sequential reference. count is the number of
// elements per rank (the vector for bcast and reductions, one block
// otherwise; ReduceScatterBlock has count/n per rank, ReduceScatter
// reduceScatterCounts).
func checkCall[T commtune.Number](ctx context.Context, c *commtune.Comm, ec elemCase[T], op coll.Operation, alg string, k, root, count int) error {
	n, me := c.Size(), c.Rank()
	// input returns elements from … from+length-1 of rank r's input. The
	// reference takes only the elements a rank checks: computing whole
	// vectors on every rank cost more than the calls under -race.
	input := func(r, from, length int) []T {
		s := make([]T, length)
		for i := range s {
			s[i] = ec.gen(k, r, from+i)
		}
		return s
	}
	// reducedTo is the sequential reduction of elements from …
	// from+length-1 of the inputs of ranks 0 … last.
	reducedTo := func(last, from, length int) []T {
		want := input(0, from, length)
		for r := 1; r <= last; r++ {
			for i := range want {
				want[i] = ec.combine(want[i], ec.gen(k, r, from+i))
			}
		}
		return want
	}
	// reduced is the sequential reduction of every rank's input.
	reduced := func() []T { return reducedTo(n-1, 0, count) }
	// gathered is every rank's input, in rank order.
	gathered := func() []T {
		var want []T
		for r := 0; r < n; r++ {
			want = append(want, input(r, 0, count)...)
		}
		return want
	}
	opt := commtune.WithAlgorithm(alg)
	var got, want []T
	switch op {
	case coll.OpBcast:
		got = make([]T, count)
		if me == root {
			got = input(root, 0, count)
		}
		want = input(root, 0, count)
		if err := commtune.Bcast(ctx, c, got, root, opt); err != nil {
			return err
		}
	case coll.OpReduce, coll.OpAllreduce:
		send := input(me, 0, count)
		got = make([]T, count)
		var err error
		if op == coll.OpReduce {
			err = commtune.Reduce(ctx, c, send, got, ec.op, root, opt)
		} else {
			err = commtune.Allreduce(ctx, c, send, got, ec.op, opt)
		}
		if err != nil {
			return err
		}
		want = got // a non-root's receive buffer is not checked
		if op == coll.OpAllreduce || me == root {
			want = reduced()
		}
	case coll.OpReduceScatterBlock, coll.OpReduceScatter:
		counts := reduceScatterCounts(n, count)
		if op == coll.OpReduceScatterBlock {
			counts = slices.Repeat([]int{count / n}, n)
		}
		total, at := 0, 0
		for r, cnt := range counts {
			if r == me {
				at = total
			}
			total += cnt
		}
		got = make([]T, counts[me])
		var err error
		if op == coll.OpReduceScatterBlock {
			err = commtune.ReduceScatterBlock(ctx, c, input(me, 0, total), got, ec.op, opt)
		} else {
			err = commtune.ReduceScatter(ctx, c, input(me, 0, total), got, counts, ec.op, opt)
		}
		if err != nil {
			return err
		}
		want = reducedTo(n-1, at, counts[me])
	case coll.OpScan, coll.OpExscan:
		// Exscan leaves rank 0's buffer as it was.
		got = input(n+me, 0, count)
		want = slices.Clone(got)
		var err error
		if op == coll.OpScan {
			err = commtune.Scan(ctx, c, input(me, 0, count), got, ec.op, opt)
			want = reducedTo(me, 0, count)
		} else {
			err = commtune.Exscan(ctx, c, input(me, 0, count), got, ec.op, opt)
			if me > 0 {
				want = reducedTo(me-1, 0, count)
			}
		}
		if err != nil {
			return err
		}
	case coll.OpScatter:
		var send []T
		if me == root {
			send = input(root, 0, n*count)
		}
		got = make([]T, count)
		want = input(root, me*count, count)
		if err := commtune.Scatter(ctx, c, send, got, root, opt); err != nil {
			return err
		}
	case coll.OpGather, coll.OpAllgather:
		got = make([]T, n*count)
		var err error
		if op == coll.OpGather {
			err = commtune.Gather(ctx, c, input(me, 0, count), got, root, opt)
		} else {
			err = commtune.Allgather(ctx, c, input(me, 0, count), got, opt)
		}
		if err != nil {
			return err
		}
		want = got // a non-root's receive buffer is not checked
		if op == coll.OpAllgather || me == root {
			want = gathered()
		}
	case coll.OpAlltoall:
		got = make([]T, n*count)
		for s := 0; s < n; s++ {
			want = append(want, input(s, me*count, count)...)
		}
		if err := commtune.Alltoall(ctx, c, input(me, 0, n*count), got, opt); err != nil {
			return err
		}
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("rank %d: result differs from the reference", me)
	}
	return nil
}
