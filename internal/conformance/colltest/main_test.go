package colltest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/conformance"
)

// TestMain runs one rank of a job when the test binary is started as one
// (conformance.RunJob), else the tests.
func TestMain(m *testing.M) {
	programs := conformance.Programs()
	programs["coll"] = conformance.WithArg(collRank)
	conformance.RankMain(programs)
	os.Exit(m.Run())
}

// collRank checks processMatrix(which) and reports how many calls it made;
// on pretend nodes ("nodes"), the hierarchical barrier's wait too.
func collRank(ctx context.Context, c *commtune.Comm, which string) error {
	calls, err := conformance.CheckCollectives(ctx, c, processMatrix(which))
	fmt.Printf("rank %d: %d collective calls checked\n", c.Rank(), calls)
	if err == nil && which == "nodes" {
		err = checkBarrierWaits(ctx, c, "barrier/hierarchical")
	}
	return err
}

// checkBarrierWaits has the last rank enter a barrier of algorithm alg
// late: no rank may leave it before that rank entered.
func checkBarrierWaits(ctx context.Context, c *commtune.Comm, alg string) error {
	const late = 200 * time.Millisecond
	for round := range 3 {
		if err := c.Barrier(ctx, commtune.WithAlgorithm(alg)); err != nil {
			return err
		}
		start := time.Now()
		if c.Rank() == c.Size()-1 {
			time.Sleep(late)
		}
		if err := c.Barrier(ctx, commtune.WithAlgorithm(alg)); err != nil {
			return err
		}
		// The ranks left the first barrier together, within a few
		// milliseconds: each must wait for the late one's sleep, less that.
		if waited := time.Since(start); waited < late-50*time.Millisecond {
			return fmt.Errorf("%s round %d: rank %d left after %v, before the last rank (late by %v) entered", alg, round, c.Rank(), waited, late)
		}
	}
	return nil
}
