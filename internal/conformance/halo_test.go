package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
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

// TestHaloLocal runs the halo check on goroutine ranks.
func TestHaloLocal(t *testing.T) {
	for _, n := range []int{1, 2, 5, 6, 8} {
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

// TestHaloProcesses runs the halo check on processes over TCP and shared
// memory, with the default thresholds and with rendezvous from 1 KiB, so
// that boxes travel both eagerly and by rendezvous (pulled over shm).
func TestHaloProcesses(t *testing.T) {
	for _, tr := range transports {
		for _, rndv := range []string{"", "1K"} {
			for _, n := range []int{4, 6} {
				name := fmt.Sprintf("%s/n=%d/rndv=%s", tr.name, n, map[string]string{"": "default", "1K": "1K"}[rndv])
				t.Run(name, func(t *testing.T) {
					env := []string{tr.env, "COMMTUNE_HALO_STATE=off"}
					if rndv != "" {
						env = append(env, "COMMTUNE_RNDV_THRESHOLD="+rndv)
					}
					out, err := runJob(t, n, "halo", "", env...)
					if err != nil {
						t.Fatalf("%v\n%s", err, out)
					}
					if !strings.Contains(out, "halo exchanges checked") {
						t.Fatalf("no rank reported its checks:\n%s", out)
					}
					// Get reads in place where a rail can and is served by
					// puts elsewhere. Over shm it can where CMA is allowed;
					// containers, Yama or seccomp may forbid it, and a job
					// does not say which, so over shm no read is reported,
					// not failed.
					reads := !strings.Contains(out, " 0 one-sided reads")
					switch {
					case tr.name == "tcp" && reads:
						t.Fatalf("over tcp, one-sided reads happened:\n%s", out)
					case tr.name == "shm" && !reads:
						t.Log("over shm, no rank read another's memory (CMA unavailable here): Get was served by puts")
					}
					if strings.Contains(out, " 0 one-sided puts") {
						t.Fatalf("a rank made no one-sided put:\n%s", out)
					}
					t.Log(strings.SplitN(out, "\n", 2)[0])
				})
			}
		}
	}
}
