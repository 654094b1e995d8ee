package conformance

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
)

// mismatchRuleMatrix is the matrix of TestMismatchRule's jobs: every
// algorithm of every operation at 1024 against 2048 elements (segments of
// every size meet both); at 2 against 3 elements, the families
// (unsegmented), which the small-message paths carry. A quick pass
// (-short, or a race-detector build) takes the families at both sizes.
func mismatchRuleMatrix(direct, quick, idle bool) []MismatchMatrix {
	all := MismatchAlgorithms(direct)
	families := func(op coll.Operation) []string {
		var out []string
		for _, name := range all(op) {
			if !strings.Contains(name, "seg=") || strings.Contains(name, "seg=none") {
				out = append(out, name)
			}
		}
		return out
	}
	big := all
	if quick {
		big = families
	}
	// 128 cases at once keep the slowest rank under half a second here
	// (2 processors, 8 ranks): each case mostly waits.
	return []MismatchMatrix{
		{Ops: coll.Operations, Algorithms: big, Sizes: []MismatchSizes{{1024, 2048}}, Batch: 128, Idle: idle},
		{Ops: coll.Operations, Algorithms: families, Sizes: []MismatchSizes{{2, 3}}, Batch: 128, Idle: idle},
	}
}

// mismatchRanks are the job sizes TestMismatchRule runs.
func mismatchRanks() []int {
	if testing.Short() || raceEnabled {
		return []int{3, 4}
	}
	return []int{2, 3, 4, 5, 6, 7, 8}
}

// runMismatchRule runs the matrices on c and returns the report lines.
func runMismatchRule(ctx context.Context, c *commtune.Comm, ms []MismatchMatrix) ([]string, error) {
	var lines []string
	for _, m := range ms {
		l, err := MismatchRule(ctx, c, m)
		lines = append(lines, l...)
		if err != nil {
			return lines, err
		}
	}
	return lines, nil
}

// TestMismatchRule holds the mismatch rule (docs/collectives.md) for
// every algorithm of every collective operation, with each rank in turn
// disagreeing on the size, on 2 to 8 ranks: goroutine ranks (with the
// direct algorithms, and the table choosing them), and processes over tcp
// and over shared memory. On odd job sizes a rank whose call returned nil
// goes idle for the bound before its next call, so the others must find
// the disagreement without it.
func TestMismatchRule(t *testing.T) {
	quick := testing.Short() || raceEnabled
	t.Run("goroutines", func(t *testing.T) {
		t.Parallel()
		for _, n := range mismatchRanks() {
			t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				err := commtune.Local(n, func(c *commtune.Comm) error {
					lines, err := runMismatchRule(ctx, c, mismatchRuleMatrix(true, quick, n%2 == 1))
					if c.Rank() == 0 {
						t.Logf("\n%s", strings.Join(lines, "\n"))
					}
					if err != nil {
						t.Errorf("rank %d: %v", c.Rank(), err)
					}
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	})
	for _, tr := range Transports {
		t.Run(tr.Name, func(t *testing.T) {
			t.Parallel()
			for _, n := range mismatchRanks() {
				t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
					arg := "full"
					if quick {
						arg = "quick"
					}
					out, err := runJob(t, n, "mismatchrule", arg, tr.Env)
					if err != nil {
						t.Fatalf("%v\n%s", err, out)
					}
					t.Logf("\n%s", out)
				})
			}
		})
	}
}

// mismatchRuleProgram is the rank program of TestMismatchRule's jobs:
// its argument says "full" or "quick".
func mismatchRuleProgram(ctx context.Context, c *commtune.Comm, arg string) error {
	lines, err := runMismatchRule(ctx, c, mismatchRuleMatrix(false, arg == "quick", c.Size()%2 == 1))
	if c.Rank() == 0 {
		report(c, lines, nil)
	}
	return err
}
