package conformance

import (
	"strings"
	"testing"
)

// TestMismatchProcesses runs the mismatch patterns on three processes
// over tcp and shm, with no context deadline, and prints what each rank
// returned: an error within mismatchBound on every rank.
func TestMismatchProcesses(t *testing.T) {
	for _, w := range []struct{ name, env string }{
		{"tcp", "COMMTUNE_TRANSPORTS=tcp"},
		{"shm", "COMMTUNE_TRANSPORTS=shm,tcp"},
	} {
		t.Run(w.name, func(t *testing.T) {
			out, err := runJob(t, 3, "mismatch", "", w.env)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if n := strings.Count(out, "ErrSizeMismatch after") + strings.Count(out, "ErrTruncate after"); n != 3*len(mismatchPatterns) {
				t.Fatalf("%d ranks × patterns reported ErrSizeMismatch or ErrTruncate, want %d:\n%s", n, 3*len(mismatchPatterns), out)
			}
			t.Logf("\n%s", out)
		})
	}
}

// TestDupAfterCloseProcesses: after a rank closes its world communicator,
// a communicator derived from it refuses Dup and everything else with
// ErrClosed, over tcp and shm (goroutine ranks: TestNilAndClosedComm).
func TestDupAfterCloseProcesses(t *testing.T) {
	for _, env := range []string{"COMMTUNE_TRANSPORTS=tcp", "COMMTUNE_TRANSPORTS=shm,tcp"} {
		if out, err := runJob(t, 2, "closeddup", "", env); err != nil {
			t.Fatalf("%s: %v\n%s", env, err, out)
		}
	}
}
