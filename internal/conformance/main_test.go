package conformance

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/commtune/commtune"
)

// TestMain runs one rank of a job when the test binary is started as one
// (RunJob), else the tests.
func TestMain(m *testing.M) {
	programs := Programs()
	programs["mismatch"] = Plain(func(ctx context.Context, c *commtune.Comm) error {
		lines, err := MismatchChecks(ctx, c)
		return report(c, lines, err)
	})
	programs["ctxtable"] = Plain(func(ctx context.Context, c *commtune.Comm) error {
		lines, err := ContextChecks(ctx, c)
		return report(c, lines, err)
	})
	programs["mismatchrule"] = WithArg(mismatchRuleProgram)
	programs["disagreethencompute"] = WithArg(disagreeThenCompute)
	programs["closeafter"] = Plain(closeAfterReceive)
	programs["closeddup"] = Plain(dupAfterClose)
	programs["policy"] = Inside(showPolicy)
	programs["railloss"] = Inside(railLoss)
	RankMain(programs)
	os.Exit(m.Run())
}

// report prints a check's lines as its rank's, and returns its error.
func report(c *commtune.Comm, lines []string, err error) error {
	for _, l := range lines {
		fmt.Printf("rank %d: %s\n", c.Rank(), l)
	}
	return err
}

// runJob is RunJob, for this package's tests.
func runJob(t *testing.T, n int, mode, arg string, env ...string) (string, error) {
	t.Helper()
	return RunJob(n, mode, arg, env...)
}

// countFromEnv is CountFromEnv, for this package's tests.
func countFromEnv(t *testing.T, name string, def, short int) int {
	t.Helper()
	return CountFromEnv(t, name, def, short)
}

// fillPayload is FillPayload, for this package's tests.
func fillPayload(b []byte, src, dst, idx int) { FillPayload(b, src, dst, idx) }
