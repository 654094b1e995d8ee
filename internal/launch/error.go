package launch

import (
	"fmt"
	"syscall"
)

// Cause says how a rank ended the job.
type Cause int

const (
	// CauseExit: the rank exited with a non-zero status or was killed by a
	// signal.
	CauseExit Cause = iota
	// CauseAbort: the rank asked the launcher to end the job (KV ABORT).
	CauseAbort
	// CauseLost: the rank dropped its connection to the launcher without
	// saying goodbye (KV Close), while running or by exiting.
	CauseLost
)

// RankError says which rank ended the job and how. Run returns it for the
// first rank that failed; later failures are usually consequences.
type RankError struct {
	Rank int
	// ExitCode is the exit status (CauseExit; -1 when a signal killed the
	// rank), the code the rank asked for (CauseAbort), or for CauseLost the
	// status it exited with, -1 if the launcher had to stop it.
	ExitCode int
	// Signal is the signal that killed the rank; 0 if it exited.
	Signal syscall.Signal
	Cause  Cause
	// Message is the rank's own explanation (CauseAbort).
	Message string
}

// Error says which rank failed and how, e.g. "rank 2 killed by signal 9
// (killed)" or "rank 1 exited with status 3".
func (e *RankError) Error() string {
	switch {
	case e.Signal != 0:
		return fmt.Sprintf("rank %d killed by signal %d (%v)", e.Rank, int(e.Signal), e.Signal)
	case e.Cause == CauseAbort && e.Message != "":
		return fmt.Sprintf("rank %d aborted the job with code %d: %s", e.Rank, e.ExitCode, e.Message)
	case e.Cause == CauseAbort:
		return fmt.Sprintf("rank %d aborted the job with code %d", e.Rank, e.ExitCode)
	case e.Cause == CauseLost && e.ExitCode == 0:
		return fmt.Sprintf("rank %d exited without saying goodbye to the launcher (no KV Close)", e.Rank)
	case e.Cause == CauseLost:
		return fmt.Sprintf("rank %d lost its connection to the launcher without saying goodbye", e.Rank)
	}
	return fmt.Sprintf("rank %d exited with status %d", e.Rank, e.ExitCode)
}

// ExitStatus is the status a launcher should exit with, as a shell would:
// 128+signal for a signal, the rank's code when it is 1 to 255, else 1.
func (e *RankError) ExitStatus() int {
	switch {
	case e.Signal > 0:
		return 128 + int(e.Signal)
	case e.ExitCode >= 1 && e.ExitCode <= 255:
		return e.ExitCode
	}
	return 1
}
