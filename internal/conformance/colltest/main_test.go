package colltest

import (
	"context"
	"fmt"
	"os"
	"testing"

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

// collRank checks processMatrix(which) and reports how many calls it made.
func collRank(ctx context.Context, c *commtune.Comm, which string) error {
	calls, err := conformance.CheckCollectives(ctx, c, processMatrix(which))
	fmt.Printf("rank %d: %d collective calls checked\n", c.Rank(), calls)
	return err
}
