package sample

import (
	"context"
	"math"
	"sync"
	"testing"

	"github.com/commtune/commtune"
)

// TestLaunchRatio: every rank reads the same positive, finite figure,
// whatever the number of ranks (those beyond the two that time wait).
func TestLaunchRatio(t *testing.T) {
	for _, n := range []int{2, 3} {
		var mu sync.Mutex
		got := map[float64]int{}
		err := commtune.Local(n, func(c *commtune.Comm) error {
			r, err := LaunchRatio(context.Background(), c)
			mu.Lock()
			got[r]++
			mu.Unlock()
			return err
		})
		if err != nil {
			t.Fatalf("%d ranks: %v", n, err)
		}
		if len(got) != 1 {
			t.Fatalf("%d ranks read different figures: %v", n, got)
		}
		for r := range got {
			if !(r > 0) || math.IsInf(r, 0) {
				t.Errorf("%d ranks: ratio %v", n, r)
			}
		}
	}
}
