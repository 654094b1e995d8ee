package launchtest

import (
	"os"
	"testing"

	"github.com/commtune/commtune/internal/conformance"
)

// TestMain runs one rank of a job when the test binary is started as one
// (a launcher starting it with conformance.RankModeEnv set), else the
// tests.
func TestMain(m *testing.M) {
	programs := conformance.Programs()
	programs["hold"] = conformance.WithArg(hold)
	programs["abort"] = conformance.Plain(abortOne)
	conformance.RankMain(programs)
	os.Exit(m.Run())
}
