package commtune

import (
	"context"
	"testing"
)

// BenchmarkNeighborAlltoall: 4 goroutine ranks on a 2x2 periodic Cart,
// 64 KiB to each of the 4 face neighbours, by NeighborAlltoall and by the
// hand-written exchange a halo implementation makes (every receive posted,
// every send started, then all waited for: IsendIrecv all at once). ns/op
// is one exchange on every rank.
func BenchmarkNeighborAlltoall(b *testing.B) {
	const block = 64 << 10 / 8 // float64s per neighbour
	for _, mode := range []string{"NeighborAlltoall", "IsendIrecv"} {
		b.Run(mode, func(b *testing.B) {
			err := Local(4, func(c *Comm) error {
				ctx := context.Background()
				cart, err := c.Cart([]int{2, 2}, []bool{true, true})
				if err != nil {
					return err
				}
				nb := cart.Neighborhood()
				ns := cart.Neighbors()
				send, recv := make([]float64, len(ns)*block), make([]float64, len(ns)*block)
				one := func() error {
					if mode == "NeighborAlltoall" {
						return NeighborAlltoall(ctx, nb, send, recv)
					}
					var reqs []*Request
					for i, s := range ns {
						r, err := IrecvSlice(cart.Comm(), recv[i*block:(i+1)*block], s, i^1)
						if err != nil {
							return err
						}
						reqs = append(reqs, r)
					}
					for j, d := range ns {
						r, err := IsendSlice(cart.Comm(), send[j*block:(j+1)*block], d, j)
						if err != nil {
							return err
						}
						reqs = append(reqs, r)
					}
					_, err := WaitAll(ctx, reqs...)
					return err
				}
				for i := 0; i < 20; i++ { // warm up
					if err := one(); err != nil {
						return err
					}
				}
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				if c.Rank() == 0 {
					b.ResetTimer()
				}
				for i := 0; i < b.N; i++ {
					if err := one(); err != nil {
						return err
					}
				}
				return c.Barrier(ctx)
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
