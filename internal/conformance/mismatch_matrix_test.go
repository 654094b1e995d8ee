package conformance

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/testenv"
)

// mismatchRuleMatrix is the matrix of TestMismatchRule's jobs: every
// family of every operation, unsegmented and in 1K segments (of which 1024
// elements against 2048 make 8 and 16, the first 8 alike), at 1024
// against 2048 elements; unsegmented at 2 against 3 elements, which the
// small-message paths carry; on pretend nodes, the table's choice at 2
// against 300, which it makes differently. A quick pass (-short, or a race-detector
// build) leaves out the segments.
func mismatchRuleMatrix(n int, direct, quick, idle, nodes bool) MismatchMatrix {
	big, small := MismatchSizes{Good: 1024, Bad: 2048}, MismatchSizes{Good: 2, Bad: 3}
	sizes := []MismatchSizes{big, small}
	// On nodes, 2 against 300 elements: the table chooses the hierarchical
	// algorithm for one (16 bytes fit the node segment's slot) and another
	// family for the other.
	straddle := MismatchSizes{Good: 2, Bad: 300}
	if nodes {
		sizes = append(sizes, straddle)
	}
	return MismatchMatrix{
		Ops:   coll.Operations,
		Sizes: sizes,
		Algorithms: func(op coll.Operation, sz MismatchSizes) []string {
			if sz == straddle {
				return []string{""}
			}
			return MismatchAlgorithms(op, direct, func(a coll.Algorithm) bool {
				return a.Segment == 0 || a.Segment == 1<<10 && sz == big && !quick
			})
		},
		// Each case mostly waits: 512 ranks' parts at once (as goroutines
		// of the job's processes), at most 128 cases, keep the slowest
		// rank under half a second here on 2 processors.
		Batch: min(128, 512/n),
		Bound: ruleBound(n),
		Idle:  idle,
	}
}

// ruleBound is the rule's bound for n ranks in this build: MismatchBound
// while every rank has a processor; when they outnumber the processors, as
// many times that as ranks share one (7 ranks on 2 processors, beside
// another package's tests, took 1.0–1.03 s for a case run alone: the
// waits that find a disagreement are timed, and each rank gets its turn
// late); three times that again under the race detector, whose processes
// run 5 to 20 times slower.
func ruleBound(n int) time.Duration {
	b := MismatchBound * time.Duration((n+runtime.NumCPU()-1)/runtime.NumCPU())
	if testenv.Race {
		b *= 3
	}
	return b
}

// mismatchRanks are the job sizes TestMismatchRule runs.
func mismatchRanks() []int {
	if testenv.Reduced() {
		return []int{3, 4}
	}
	return []int{2, 3, 4, 5, 6, 7, 8}
}

// TestMismatchRule holds the mismatch rule (docs/collectives.md) for
// every family of every collective operation, with each rank in turn
// disagreeing on the size, on 2 to 8 ranks: goroutine ranks (with the
// direct algorithms, and the table choosing them), processes over tcp
// and over shared memory, and processes on two pretend nodes. On odd job sizes a rank whose call returned nil
// goes idle for the bound before its next call, so the others must find
// the disagreement without it.
func TestMismatchRule(t *testing.T) {
	quick := testenv.Reduced()
	t.Run("goroutines", func(t *testing.T) {
		t.Parallel()
		for _, n := range mismatchRanks() {
			t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				err := commtune.Local(n, func(c *commtune.Comm) error {
					lines, err := MismatchRule(ctx, c, mismatchRuleMatrix(n, true, quick, n%2 == 1, false))
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
	t.Run("nodes", func(t *testing.T) {
		// Pretend nodes of two and three ranks: the hierarchical
		// algorithms, which the table chooses there, run their phases on
		// the nodes' segments and over TCP.
		t.Parallel()
		for _, n := range []int{4, 5} {
			if quick && n != 4 {
				continue
			}
			t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
				arg := "full,nodes"
				if quick {
					arg = "quick,nodes"
				}
				out, err := RunJobNodes(n, 2, 0, "mismatchrule", arg, "COMMTUNE_TRANSPORTS=shm,tcp")
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				t.Logf("\n%s", out)
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
// its argument says "full" or "quick", and ",nodes" on pretend nodes.
func mismatchRuleProgram(ctx context.Context, c *commtune.Comm, arg string) error {
	mode, nodes := strings.CutSuffix(arg, ",nodes")
	lines, err := MismatchRule(ctx, c, mismatchRuleMatrix(c.Size(), false, mode == "quick", c.Size()%2 == 1, nodes))
	if c.Rank() == 0 {
		report(c, lines, nil)
	}
	return err
}

// TestMismatchRuleHoldsItsBound: a case that misses the bound, batched or
// alone, breaks the rule; running it again alone forgives only load. With
// a bound no error can meet, the matrix must fail, naming the bound.
func TestMismatchRuleHoldsItsBound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := MismatchMatrix{
		Ops:   []coll.Operation{coll.OpAllreduce},
		Sizes: []MismatchSizes{{Good: 2, Bad: 3}},
		Algorithms: func(op coll.Operation, _ MismatchSizes) []string {
			return []string{""}
		},
		Batch: 4,
		Bound: time.Nanosecond,
	}
	err := commtune.Local(2, func(c *commtune.Comm) error {
		_, err := MismatchRule(ctx, c, m)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "beyond 1ns") {
		t.Fatalf("a bound of 1 ns: %v, want the rule broken by the bound", err)
	}
}
