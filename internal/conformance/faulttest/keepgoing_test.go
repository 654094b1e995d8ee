package faulttest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/launch"
)

// checkSurvivors checks the output of a Survive job of n ranks: every rank
// but the victim saw ErrPeerLost naming it and then finished its laps
// with the others.
func checkSurvivors(t *testing.T, out string, n int) {
	t.Helper()
	v := conformance.SurviveVictim
	for r := range n {
		if r == v {
			continue
		}
		if !regexp.MustCompile(fmt.Sprintf(`(?m)rank %d: lost rank %d: rank %d lost: `, r, v, v)).MatchString(out) {
			t.Errorf("rank %d did not see ErrPeerLost naming rank %d", r, v)
		}
		if !strings.Contains(out, fmt.Sprintf("rank %d: survived ", r)) {
			t.Errorf("rank %d did not go on with the survivors", r)
		}
	}
	if strings.Contains(out, "FAIL") {
		t.Errorf("a rank failed")
	}
}

// TestKeepGoing kills rank 2 of 4 in a job of commtune run --keep-going,
// over TCP and shared memory: the launcher reports the loss and lets the
// job go on, the three survivors see ErrPeerLost naming rank 2, go on
// passing messages among themselves and exit 0, and Run returns nil. No
// process and no shared-memory file of the job remains.
func TestKeepGoing(t *testing.T) {
	for _, tr := range conformance.Transports {
		t.Run(tr.Name, func(t *testing.T) {
			out, lost, err := conformance.RunJobKeepGoing(4, "survive", "", tr.Env)
			t.Logf("%s", out)
			if err != nil {
				t.Fatalf("launcher error %v, want nil: the job goes on without rank %d", err, conformance.SurviveVictim)
			}
			want := launch.RankError{Rank: conformance.SurviveVictim, ExitCode: -1, Signal: syscall.SIGKILL}
			if len(lost) != 1 || lost[0] != want {
				t.Errorf("losses reported %v, want [%v]", lost, &want)
			}
			checkSurvivors(t, out, 4)
			if m := regexp.MustCompile(`rank 0: job (\S+)`).FindStringSubmatch(out); m == nil {
				t.Errorf("rank 0 did not name its job")
			} else if left, _ := filepath.Glob("/dev/shm/commtune-" + m[1] + "*"); len(left) > 0 {
				t.Errorf("shared memory files left after the job: %v", left)
			}
			if left := processesOf(os.Args[0]); len(left) > 0 {
				t.Errorf("processes left behind: %v", left)
			}
		})
	}
}
