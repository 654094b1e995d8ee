package shmtest

import (
	"os"
	"testing"

	"github.com/commtune/commtune/internal/conformance"
)

// TestMain runs one rank of a job when the test binary is started as one
// (conformance.RunJob), else the tests.
func TestMain(m *testing.M) {
	programs := conformance.Programs()
	programs["methods"] = conformance.WithArg(methodsExchange)
	programs["crossing"] = conformance.Plain(crossingExchange)
	programs["segment"] = conformance.Plain(segmentJob)
	conformance.RankMain(programs)
	os.Exit(m.Run())
}
