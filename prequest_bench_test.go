package commtune

import (
	"context"
	"errors"
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

// Point-to-point: an exchange of 8 bytes each way through Isend and
// Irecv, and through persistent requests made once (a pooled request per
// start, no Request or engine request allocated).

func BenchmarkIsendIrecv(b *testing.B) {
	benchLocal(b, func(ctx context.Context, c *Comm, n int) error {
		out, in := make([]byte, 8), make([]byte, 8)
		peer := 1 - c.Rank()
		for range n {
			r, err := c.Irecv(in, peer, 0)
			if err != nil {
				return err
			}
			s, err := c.Isend(out, peer, 0)
			if err != nil {
				return err
			}
			if _, err := r.Wait(ctx); err != nil {
				return err
			}
			if _, err := s.Wait(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

func BenchmarkPersistentSendRecv(b *testing.B) {
	benchLocal(b, func(ctx context.Context, c *Comm, n int) error {
		out, in := make([]byte, 8), make([]byte, 8)
		peer := 1 - c.Rank()
		r, err := c.RecvInit(in, peer, 0)
		if err != nil {
			return err
		}
		s, err := c.SendInit(out, peer, 0)
		if err != nil {
			return err
		}
		for range n {
			if err := StartAll(r, s); err != nil {
				return err
			}
			if _, err := r.Wait(ctx); err != nil {
				return err
			}
			if _, err := s.Wait(ctx); err != nil {
				return err
			}
		}
		return errors.Join(r.Free(), s.Free())
	})
}
