package commtune

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// haloMismatch is a way the last rank of a job disagrees with the others
// on a Halo's shape.
type haloMismatch struct {
	name string
	// halo makes the calling rank's Halo; odd is true on the rank that
	// disagrees.
	halo func(cart *Cart, odd bool, impl string) (*Halo, error)
}

// haloMismatches: every rank's grid is n×1 with extents 4×3, width 1, one
// float64 per cell, but for the last rank, which has 3 components, 5
// cells along the undivided dimension (so the faces it shares differ:
// an uneven division of the divided one would be legitimate), width 2, or
// float32 cells.
var haloMismatches = []haloMismatch{
	{"components", func(cart *Cart, odd bool, impl string) (*Halo, error) {
		comps := 1
		if odd {
			comps = 3
		}
		return NewHalo(cart, make([]float64, 6*5*comps), []int{4, 3}, 1, comps, WithHaloImpl(impl))
	}},
	{"extents", func(cart *Cart, odd bool, impl string) (*Halo, error) {
		ext := []int{4, 3}
		if odd {
			ext[1] = 5
		}
		return NewHalo(cart, make([]float64, 6*(ext[1]+2)), ext, 1, 1, WithHaloImpl(impl))
	}},
	{"width", func(cart *Cart, odd bool, impl string) (*Halo, error) {
		w := 1
		if odd {
			w = 2
		}
		return NewHalo(cart, make([]float64, (4+2*w)*(3+2*w)), []int{4, 3}, w, 1, WithHaloImpl(impl))
	}},
	{"element type", func(cart *Cart, odd bool, impl string) (*Halo, error) {
		if odd {
			return NewHalo(cart, make([]float32, 6*5), []int{4, 3}, 1, 1, WithHaloImpl(impl))
		}
		return NewHalo(cart, make([]float64, 6*5), []int{4, 3}, 1, 1, WithHaloImpl(impl))
	}},
}

// TestHaloMismatchEndsEverywhere: when ranks disagree on a Halo's shape,
// every rank's exchange returns an error within haloMismatchBound, with no
// deadline of its own, for every implementation, on 2 and 3 ranks. No
// rank leaves the job before all have their answer (a rank that left
// would end its peers' waits by itself).
func TestHaloMismatchEndsEverywhere(t *testing.T) {
	const haloMismatchBound = 2 * time.Second
	for _, n := range []int{2, 3} {
		for _, m := range haloMismatches {
			for _, impl := range HaloImpls() {
				t.Run(fmt.Sprintf("n=%d/%s/%s", n, m.name, impl), func(t *testing.T) {
					t.Parallel()
					took := make([]time.Duration, n)
					errs := make([]error, n)
					var answered sync.WaitGroup
					answered.Add(n)
					done := make(chan error, 1)
					go func() {
						done <- Local(n, func(c *Comm) error {
							cart, err := c.Cart([]int{n, 1}, []bool{true, false})
							if err != nil {
								return err
							}
							h, err := m.halo(cart, c.Rank() == n-1, impl)
							if err != nil {
								return err
							}
							if err := c.Barrier(context.Background()); err != nil {
								return err
							}
							t0 := time.Now()
							errs[c.Rank()] = h.Exchange(context.Background())
							took[c.Rank()] = time.Since(t0)
							answered.Done()
							waitTimeout(&answered, 3*haloMismatchBound) // a hung rank is caught below
							return nil
						})
					}()
					select {
					case err := <-done:
						if err != nil {
							t.Fatal(err)
						}
					case <-time.After(10 * haloMismatchBound):
						t.Fatalf("the job did not end; errors so far %v", errs)
					}
					t.Logf("slowest rank's error after %v", slices.Max(took))
					for r := range n {
						switch {
						case errs[r] == nil:
							t.Errorf("rank %d: the exchange succeeded", r)
						case took[r] > haloMismatchBound:
							t.Errorf("rank %d: error after %v, want within %v: %v", r, took[r], haloMismatchBound, errs[r])
						case errors.Is(errs[r], ErrPeerLost):
							t.Errorf("rank %d: %v: a peer that left, not the disagreement", r, errs[r])
						}
					}
				})
			}
		}
	}
}

// waitTimeout waits for wg, at most d.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(d):
	}
}
