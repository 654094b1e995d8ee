//go:build !race

package commtune

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestBlockingCallsDoNotAllocate checks that blocking calls allocate
// nothing in the steady state, on two goroutine ranks: point-to-point and
// collectives. (The race detector allocates on its own, hence the build
// tag; .ci/run runs this without it.) Bcast is left out: its root runs
// ahead of the other rank, and the call costs 1–2 allocations on the two
// ranks — already so before the small-message fast path, not yet fixed.
// With a slow peer, the measured rank's waits outlast their polling and
// park, as on a loaded machine.
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
	// An option made once and passed to every call: applying it, and
	// telling the choice, allocate nothing either.
	var chosen [2]CollChoice
	withChoice := [2][]CollOption{{WithChoice(&chosen[0])}, {WithChoice(&chosen[1])}}
	calls = append(calls, struct {
		name string
		call func(ctx context.Context, c *Comm, in, out []float64) error
	}{"allreduce-choice", func(ctx context.Context, c *Comm, in, out []float64) error {
		return Allreduce(ctx, c, in, out[:len(in)], Sum, withChoice[c.Rank()]...)
	}})
	type variant struct {
		elems int
		slow  time.Duration // the other rank's pause before each call
	}
	for _, k := range calls {
		variants := []variant{{2, 0}, {128, 0}}
		if k.name == "sendrecv" || k.name == "reduce" || k.name == "allreduce" {
			variants = append(variants, variant{2, 300 * time.Microsecond})
		}
		for _, v := range variants {
			elems := v.elems
			name := fmt.Sprintf("%s/%dB", k.name, 8*elems)
			if v.slow > 0 {
				name += "/parked"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				var allocs float64
				err := Local(2, func(c *Comm) error {
					in, out := make([]float64, elems), make([]float64, 2*elems)
					// A rank that only sends in a call (a reduce's leaf, a
					// scan's rank 0) may run ahead by as many calls as
					// its eager credit allows, and each message it is
					// ahead by waits in a buffer of the receiver's: the
					// first time a rank gets that far ahead (a descheduled
					// peer, on a loaded machine), the pools grow, once per
					// message. A barrier every few calls keeps both ranks
					// within the warm-up's reach.
					calls := 0
					call := func() error {
						if err := k.call(ctx, c, in, out); err != nil {
							return err
						}
						if calls++; calls%8 == 0 {
							return c.Barrier(ctx)
						}
						return nil
					}
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
							if v.slow > 0 {
								time.Sleep(v.slow)
							}
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
