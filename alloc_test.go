//go:build !race

package commtune

import (
	"context"
	"fmt"
	"testing"
)

// TestBlockingCallsDoNotAllocate checks that blocking calls allocate
// nothing in the steady state, on two goroutine ranks: point-to-point and
// collectives. (The race detector allocates on its own, hence the build
// tag; .ci/run runs this without it.) Bcast is left out: its root runs
// ahead of the other rank, and the call costs 1–2 allocations on the two
// ranks — already so before the small-message fast path, not yet fixed.
func TestBlockingCallsDoNotAllocate(t *testing.T) {
	const runs = 500
	calls := []struct {
		name string
		call func(ctx context.Context, c *Comm, in, out []float64) error
	}{
		{"sendrecv", func(ctx context.Context, c *Comm, in, out []float64) error {
			peer := 1 - c.Rank()
			if c.Rank() == 0 {
				if err := SendSlice(ctx, c, in, peer, 0); err != nil {
					return err
				}
				_, err := RecvSlice(ctx, c, out[:len(in)], peer, 0)
				return err
			}
			if _, err := RecvSlice(ctx, c, out[:len(in)], peer, 0); err != nil {
				return err
			}
			return SendSlice(ctx, c, in, peer, 0)
		}},
	}
	for _, k := range collCalls {
		if k.name != "bcast" {
			calls = append(calls, k)
		}
	}
	for _, k := range calls {
		for _, elems := range []int{2, 128} {
			t.Run(fmt.Sprintf("%s/%dB", k.name, 8*elems), func(t *testing.T) {
				ctx := context.Background()
				var allocs float64
				err := Local(2, func(c *Comm) error {
					in, out := make([]float64, elems), make([]float64, 2*elems)
					call := func() error { return k.call(ctx, c, in, out) }
					for range 200 { // warm up pools, plans and contexts
						if err := call(); err != nil {
							return err
						}
					}
					if err := c.Barrier(ctx); err != nil {
						return err
					}
					if c.Rank() != 0 {
						for range runs + 1 { // AllocsPerRun's warm-up call too
							if err := call(); err != nil {
								return err
							}
						}
						return nil
					}
					var err error
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
					t.Errorf("%v allocations per call on the two ranks, want 0", allocs)
				}
			})
		}
	}
}
