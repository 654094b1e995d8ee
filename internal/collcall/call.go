// Package collcall makes one collective call of each operation, with its
// buffers, for the passes that time collectives: the benchmarks and the
// sampling of a machine's collective table.
package collcall

import (
	"context"
	"fmt"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
)

// Size is the size in bytes a benchmark of op on n ranks measures
// for size: none for barrier; for the reductions, whole float64 elements,
// at least one (ReduceScatterBlock: at least one per rank, and as many
// for each); size itself for the other operations.
func Size(op coll.Operation, n, size int) int {
	switch {
	case op == coll.OpBarrier:
		return 0
	case op == coll.OpReduceScatterBlock:
		return max(size/8/n, 1) * 8 * n
	case op.Reduces():
		return max(size/8*8, 8)
	}
	return size
}

// EvenCounts splits elems elements into n blocks as evenly as they go,
// the first ones one longer: the blocks of the ReduceScatter benchmark
// (and of the reference's, csrc/mpibench.c).
func EvenCounts(elems, n int) []int {
	counts := make([]int, n)
	for r := range counts {
		counts[r] = elems / n
		if r < elems%n {
			counts[r]++
		}
	}
	return counts
}

// Call is one collective call with its buffers (New).
type Call = func(context.Context, *commtune.Comm, []commtune.CollOption) error

// Init makes a persistent request of a call on its buffers (NewPersistent).
type Init = func(*commtune.Comm, []commtune.CollOption) (*commtune.Prequest, error)

// New returns one call of op moving size bytes on rank me of n, with
// its buffers allocated once.
func New(op coll.Operation, n, me, size int) (Call, error) {
	call, _, err := calls(op, n, me, size)
	return call, err
}

// NewPersistent returns what New's call is as a persistent request: the
// same operation on buffers of the same sizes, made by the operation's
// …Init, whose starts the benchmarks time.
func NewPersistent(op coll.Operation, n, me, size int) (Init, error) {
	_, init, err := calls(op, n, me, size)
	return init, err
}

// calls returns op's call (New) and its persistent init (NewPersistent)
// on the same buffers.
func calls(op coll.Operation, n, me, size int) (Call, Init, error) {
	bytes := func(k int) []byte { return make([]byte, k) }
	// vector is the reductions' input: size bytes of float64s 0, 1, 2 …
	vector := func() []float64 {
		v := make([]float64, size/8)
		for i := range v {
			v[i] = float64(i)
		}
		return v
	}
	type O = []commtune.CollOption
	type C = *commtune.Comm
	type P = *commtune.Prequest
	switch op {
	case coll.OpBarrier:
		return func(ctx context.Context, c C, o O) error { return c.Barrier(ctx, o...) },
			func(c C, o O) (P, error) { return c.BarrierInit(o...) }, nil
	case coll.OpBcast:
		buf := bytes(size)
		return func(ctx context.Context, c C, o O) error { return commtune.Bcast(ctx, c, buf, 0, o...) },
			func(c C, o O) (P, error) { return commtune.BcastInit(c, buf, 0, o...) }, nil
	case coll.OpReduce, coll.OpAllreduce:
		send, recv := vector(), make([]float64, size/8)
		if op == coll.OpReduce {
			return func(ctx context.Context, c C, o O) error {
					return commtune.Reduce(ctx, c, send, recv, commtune.Sum, 0, o...)
				},
				func(c C, o O) (P, error) { return commtune.ReduceInit(c, send, recv, commtune.Sum, 0, o...) }, nil
		}
		return func(ctx context.Context, c C, o O) error {
				return commtune.Allreduce(ctx, c, send, recv, commtune.Sum, o...)
			},
			func(c C, o O) (P, error) { return commtune.AllreduceInit(c, send, recv, commtune.Sum, o...) }, nil
	case coll.OpReduceScatterBlock, coll.OpReduceScatter:
		send := vector()
		counts := EvenCounts(len(send), n)
		recv := make([]float64, counts[me])
		if op == coll.OpReduceScatterBlock {
			return func(ctx context.Context, c C, o O) error {
					return commtune.ReduceScatterBlock(ctx, c, send, recv, commtune.Sum, o...)
				},
				func(c C, o O) (P, error) { return commtune.ReduceScatterBlockInit(c, send, recv, commtune.Sum, o...) }, nil
		}
		return func(ctx context.Context, c C, o O) error {
				return commtune.ReduceScatter(ctx, c, send, recv, counts, commtune.Sum, o...)
			},
			func(c C, o O) (P, error) {
				return commtune.ReduceScatterInit(c, send, recv, counts, commtune.Sum, o...)
			}, nil
	case coll.OpScan, coll.OpExscan:
		send, recv := vector(), make([]float64, size/8)
		if op == coll.OpScan {
			return func(ctx context.Context, c C, o O) error {
					return commtune.Scan(ctx, c, send, recv, commtune.Sum, o...)
				},
				func(c C, o O) (P, error) { return commtune.ScanInit(c, send, recv, commtune.Sum, o...) }, nil
		}
		return func(ctx context.Context, c C, o O) error {
				return commtune.Exscan(ctx, c, send, recv, commtune.Sum, o...)
			},
			func(c C, o O) (P, error) { return commtune.ExscanInit(c, send, recv, commtune.Sum, o...) }, nil
	case coll.OpScatter:
		send, recv := bytes(n*size), bytes(size)
		return func(ctx context.Context, c C, o O) error { return commtune.Scatter(ctx, c, send, recv, 0, o...) },
			func(c C, o O) (P, error) { return commtune.ScatterInit(c, send, recv, 0, o...) }, nil
	case coll.OpGather:
		send, recv := bytes(size), bytes(n*size)
		return func(ctx context.Context, c C, o O) error { return commtune.Gather(ctx, c, send, recv, 0, o...) },
			func(c C, o O) (P, error) { return commtune.GatherInit(c, send, recv, 0, o...) }, nil
	case coll.OpAllgather:
		send, recv := bytes(size), bytes(n*size)
		return func(ctx context.Context, c C, o O) error { return commtune.Allgather(ctx, c, send, recv, o...) },
			func(c C, o O) (P, error) { return commtune.AllgatherInit(c, send, recv, o...) }, nil
	case coll.OpAlltoall:
		send, recv := bytes(n*size), bytes(n*size)
		return func(ctx context.Context, c C, o O) error { return commtune.Alltoall(ctx, c, send, recv, o...) },
			func(c C, o O) (P, error) { return commtune.AlltoallInit(c, send, recv, o...) }, nil
	case coll.OpScatterv, coll.OpGatherv, coll.OpAllgatherv:
		counts, displs := make([]int, n), make([]int, n)
		for r := range counts {
			counts[r], displs[r] = size, r*size
		}
		all, mine := bytes(n*size), bytes(size)
		return func(ctx context.Context, c C, o O) error {
				switch op {
				case coll.OpScatterv:
					return commtune.Scatterv(ctx, c, all, counts, displs, mine, 0, o...)
				case coll.OpGatherv:
					return commtune.Gatherv(ctx, c, mine, all, counts, displs, 0, o...)
				}
				return commtune.Allgatherv(ctx, c, mine, all, counts, displs, o...)
			}, func(c C, o O) (P, error) {
				switch op {
				case coll.OpScatterv:
					return commtune.ScattervInit(c, all, counts, displs, mine, 0, o...)
				case coll.OpGatherv:
					return commtune.GathervInit(c, mine, all, counts, displs, 0, o...)
				}
				return commtune.AllgathervInit(c, mine, all, counts, displs, o...)
			}, nil
	case coll.OpAlltoallv:
		counts, displs := make([]int, n), make([]int, n)
		for r := range counts {
			counts[r], displs[r] = size, r*size
		}
		send, recv := bytes(n*size), bytes(n*size)
		return func(ctx context.Context, c C, o O) error {
				return commtune.Alltoallv(ctx, c, send, counts, displs, recv, counts, displs, o...)
			}, func(c C, o O) (P, error) {
				return commtune.AlltoallvInit(c, send, counts, displs, recv, counts, displs, o...)
			}, nil
	}
	return nil, nil, fmt.Errorf("no call for %q", op)
}
