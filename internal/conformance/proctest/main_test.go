package proctest

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
	programs["halo"] = conformance.Plain(haloRank)
	programs["flood"] = conformance.Plain(flood)
	programs["idle"] = conformance.Plain(idleRecv)
	programs["sharedread"] = conformance.Plain(sharedRead)
	programs["persistent"] = conformance.Plain(persistentCase)
	conformance.RankMain(programs)
	os.Exit(m.Run())
}

// haloRank runs the halo check and reports how many exchanges it checked
// and the one-sided operations its rank made.
func haloRank(ctx context.Context, c *commtune.Comm) error {
	n, err := conformance.HaloCheck(ctx, c)
	st := c.Stats()
	fmt.Printf("rank %d: %d halo exchanges checked, %d one-sided puts, %d one-sided reads\n", c.Rank(), n, st.Puts, st.Reads)
	return err
}
