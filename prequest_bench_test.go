package commtune

import (
	"context"
	"testing"
)

// The persistent Allreduce against the blocking one, 8 bytes on two
// goroutine ranks, calls back to back: what a start and its wait cost
// once the call's checks, plan and algorithm are made at init. Run them
// in turns (-count), on a quiet machine, and compare medians.

func BenchmarkAllreduce(b *testing.B) {
	benchLocal(b, func(ctx context.Context, c *Comm, n int) error {
		in, out := []float64{float64(c.Rank())}, []float64{0}
		for range n {
			if err := Allreduce(ctx, c, in, out, Sum); err != nil {
				return err
			}
		}
		return nil
	})
}

func BenchmarkPersistentAllreduce(b *testing.B) {
	benchLocal(b, func(ctx context.Context, c *Comm, n int) error {
		in, out := []float64{float64(c.Rank())}, []float64{0}
		p, err := AllreduceInit(c, in, out, Sum)
		if err != nil {
			return err
		}
		for range n {
			if err := p.Start(); err != nil {
				return err
			}
			if _, err := p.Wait(ctx); err != nil {
				return err
			}
		}
		return p.Free()
	})
}
