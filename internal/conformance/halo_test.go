package conformance

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/testenv"
)

// TestHaloGrids checks that the halo check's grids have, for every number
// of ranks, one with an open dimension before a dimension with
// neighbours, where a ghost past the open border could travel on.
func TestHaloGrids(t *testing.T) {
	for n := 1; n <= 12; n++ {
		if !slices.ContainsFunc(HaloGrids(n), HaloGrid.OpenFirst) {
			t.Errorf("n=%d: no grid has an open dimension before one with neighbours: %v", n, HaloGrids(n))
		}
	}
	for _, tc := range []struct {
		g    HaloGrid
		want bool
	}{
		{HaloGrid{[]int{4}, []bool{false}}, false},
		{HaloGrid{[]int{2, 2}, []bool{false, false}}, true},
		{HaloGrid{[]int{2, 1}, []bool{false, false}}, false},
		{HaloGrid{[]int{2, 1}, []bool{false, true}}, true},
		{HaloGrid{[]int{2, 2}, []bool{true, false}}, false},
		{HaloGrid{[]int{2, 2, 1}, []bool{true, false, true}}, true},
	} {
		if got := tc.g.OpenFirst(); got != tc.want {
			t.Errorf("%v: OpenFirst() = %v, want %v", tc.g, got, tc.want)
		}
	}
}

// TestHaloLocal runs the halo check on goroutine ranks (under the race
// detector, on 2 and 5: a periodic axis of extent 2 and an odd grid).
func TestHaloLocal(t *testing.T) {
	for _, n := range testenv.Pick([]int{1, 2, 5, 6, 8}, []int{2, 5}) {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			err := commtune.Local(n, func(c *commtune.Comm) error {
				_, err := HaloCheck(ctx, c)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
