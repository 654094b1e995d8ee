package commtune

import (
	"context"
	"fmt"
	"testing"
)

// The steady-state cost of blocking calls on two goroutine ranks: time and,
// what these exist for, allocations per call (b.ReportAllocs counts the
// whole process, so both ranks' calls are in it; one operation is one call
// on each rank).

func benchLocal(b *testing.B, body func(ctx context.Context, c *Comm, n int) error, opts ...Option) {
	ctx := context.Background()
	b.ReportAllocs()
	err := Local(2, func(c *Comm) error {
		if err := body(ctx, c, 100); err != nil { // warm up pools and contexts
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 0 {
			b.ResetTimer()
		}
		return body(ctx, c, b.N)
	}, opts...)
	if err != nil {
		b.Fatal(err)
	}
}

func BenchmarkSendRecv(b *testing.B) {
	for _, size := range []int{8, 1 << 10, 16 << 10} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			benchLocal(b, func(ctx context.Context, c *Comm, n int) error {
				buf := make([]byte, size)
				peer := 1 - c.Rank()
				for i := 0; i < n; i++ {
					if c.Rank() == 0 {
						if err := c.Send(ctx, buf, peer, 0); err != nil {
							return err
						}
						if _, err := c.Recv(ctx, buf, peer, 0); err != nil {
							return err
						}
						continue
					}
					if _, err := c.Recv(ctx, buf, peer, 0); err != nil {
						return err
					}
					if err := c.Send(ctx, buf, peer, 0); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}

// unevenCounts are ReduceScatter's counts on two ranks for the vector
// lengths of the table below, made once: counts built for each call would
// cost an allocation of their own.
var unevenCounts = map[int][]int{2: {0, 2}, 128: {32, 96}}

// collCalls are the blocking collectives the allocation benchmarks and
// TestBlockingCallsDoNotAllocate make, on vectors in and out (out twice
// as long).
var collCalls = []struct {
	name string
	call func(ctx context.Context, c *Comm, in, out []float64) error
}{
	{"barrier", func(ctx context.Context, c *Comm, _, _ []float64) error { return c.Barrier(ctx) }},
	{"bcast", func(ctx context.Context, c *Comm, in, _ []float64) error { return Bcast(ctx, c, in, 0) }},
	{"reduce", func(ctx context.Context, c *Comm, in, out []float64) error {
		return Reduce(ctx, c, in, out[:len(in)], Sum, 0)
	}},
	{"allreduce", func(ctx context.Context, c *Comm, in, out []float64) error {
		return Allreduce(ctx, c, in, out[:len(in)], Sum)
	}},
	{"allgather", func(ctx context.Context, c *Comm, in, out []float64) error {
		return Allgather(ctx, c, in, out[:2*len(in)])
	}},
	{"alltoall", func(ctx context.Context, c *Comm, in, out []float64) error {
		return Alltoall(ctx, c, in[:len(in)/2*2], out[:len(in)/2*2])
	}},
	{"reducescatterblock", func(ctx context.Context, c *Comm, in, out []float64) error {
		return ReduceScatterBlock(ctx, c, in[:len(in)/2*2], out[:len(in)/2], Sum)
	}},
	{"reducescatter", func(ctx context.Context, c *Comm, in, out []float64) error {
		counts := unevenCounts[len(in)]
		if counts == nil {
			counts = []int{len(in) / 4, len(in) - len(in)/4}
		}
		return ReduceScatter(ctx, c, in, out[:counts[c.Rank()]], counts, Sum)
	}},
	{"scan", func(ctx context.Context, c *Comm, in, out []float64) error {
		return Scan(ctx, c, in, out[:len(in)], Sum)
	}},
	{"exscan", func(ctx context.Context, c *Comm, in, out []float64) error {
		return Exscan(ctx, c, in, out[:len(in)], Sum)
	}},
}

func BenchmarkCollectives(b *testing.B) {
	for _, sel := range []string{CollSelectTable, CollSelectLottery} {
		for _, k := range collCalls {
			for _, elems := range []int{2, 128} {
				b.Run(fmt.Sprintf("%s/%s/%dB", sel, k.name, 8*elems), func(b *testing.B) {
					benchLocal(b, func(ctx context.Context, c *Comm, n int) error {
						in, out := make([]float64, elems), make([]float64, 2*elems)
						for i := 0; i < n; i++ {
							if err := k.call(ctx, c, in, out); err != nil {
								return err
							}
						}
						return nil
					}, func(c *Config) { c.CollSelect = sel })
				})
			}
		}
	}
}
