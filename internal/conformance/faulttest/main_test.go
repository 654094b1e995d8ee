package faulttest

import (
	"os"
	"testing"

	"github.com/commtune/commtune/internal/conformance"
)

// TestMain runs one rank of a job when the test binary is started as one
// (conformance.RunJob), else the tests.
func TestMain(m *testing.M) {
	programs := conformance.Programs()
	programs["kill"] = conformance.WithArg(killRing)
	programs["killcoll"] = conformance.WithArg(killCollective)
	programs["recover"] = conformance.WithArg(recoverJob)
	programs["survive"] = conformance.WithArg(conformance.Survive)
	conformance.RankMain(programs)
	os.Exit(m.Run())
}
