//go:build !race

package commtune

import (
	"context"
	"fmt"
	"testing"
)

// TestPersistentStartsDoNotAllocate: a start and its wait allocate
// nothing in the steady state, on two goroutine ranks — a send and a
// receive (pooled requests), and the collectives the node segment carries
// (no Call, goroutine or channel). Everything a start needs was made at
// init. (The race detector allocates on its own, hence the build tag.)
func TestPersistentStartsDoNotAllocate(t *testing.T) {
	const runs = 500
	type made struct {
		reqs []*Prequest // started together, then waited in order
	}
	cases := []struct {
		name string
		init func(c *Comm, in, out []float64) (made, error)
	}{
		{"sendrecv", func(c *Comm, in, out []float64) (made, error) {
			peer := 1 - c.Rank()
			r, err := RecvInitSlice(c, out[:len(in)], peer, 0)
			if err != nil {
				return made{}, err
			}
			s, err := SendInitSlice(c, in, peer, 0)
			return made{[]*Prequest{r, s}}, err
		}},
		{"allreduce", func(c *Comm, in, out []float64) (made, error) {
			p, err := AllreduceInit(c, in, out[:len(in)], Sum)
			return made{[]*Prequest{p}}, err
		}},
		{"reduce", func(c *Comm, in, out []float64) (made, error) {
			p, err := ReduceInit(c, in, out[:len(in)], Sum, 0)
			return made{[]*Prequest{p}}, err
		}},
		{"allgather", func(c *Comm, in, out []float64) (made, error) {
			p, err := AllgatherInit(c, in, out)
			return made{[]*Prequest{p}}, err
		}},
		{"barrier", func(c *Comm, _, _ []float64) (made, error) {
			p, err := c.BarrierInit()
			return made{[]*Prequest{p}}, err
		}},
	}
	for _, k := range cases {
		for _, elems := range []int{2, 64} {
			t.Run(fmt.Sprintf("%s/%dB", k.name, 8*elems), func(t *testing.T) {
				ctx := context.Background()
				var allocs float64
				err := Local(2, func(c *Comm) error {
					in, out := make([]float64, elems), make([]float64, 2*elems)
					m, err := k.init(c, in, out)
					if err != nil {
						return err
					}
					// A barrier every few calls keeps a rank that only
					// gives (a reduce's leaf) within the warm-up's reach,
					// as in TestBlockingCallsDoNotAllocate.
					calls := 0
					call := func() error {
						if err := StartAll(m.reqs...); err != nil {
							return err
						}
						for _, p := range m.reqs {
							if _, err := p.Wait(ctx); err != nil {
								return err
							}
						}
						if calls++; calls%8 == 0 {
							return c.Barrier(ctx)
						}
						return nil
					}
					for range 200 {
						if err := call(); err != nil {
							return err
						}
					}
					if err := c.Barrier(ctx); err != nil {
						return err
					}
					if c.Rank() != 0 {
						for range runs + 1 {
							if err := call(); err != nil {
								return err
							}
						}
						return nil
					}
					allocs = testing.AllocsPerRun(runs, func() {
						if e := call(); e != nil && err == nil {
							err = e
						}
					})
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				if allocs != 0 {
					t.Errorf("%v allocations per start on the two ranks, want 0", allocs)
				}
			})
		}
	}
}
