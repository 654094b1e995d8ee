package faulttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/conformance"
)

// TestKillOpenMPI kills one rank of four under Open MPI's mpirun (ranks
// found through its PMIx server, over shared memory): the other ranks
// must fail with ErrPeerLost within 5 s of the kill (those mpirun has not
// ended first: it tears the job down at once), and mpirun must end the
// job, blaming the killed rank, with no process left. TestKillProcesses holds
// every survivor to it under the project's own launcher.
func TestKillOpenMPI(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun.openmpi")
	if err != nil {
		t.Skip("Open MPI's mpirun not installed (apt-get install openmpi-bin); .ci/run installs it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"--oversubscribe", "-np", "4"}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-run-as-root")
	}
	cmd := exec.CommandContext(ctx, mpirun, append(args, os.Args[0])...)
	cmd.Env = append(os.Environ(), conformance.RankModeEnv+"=kill", conformance.RankArgEnv+"="+t.TempDir()+"/killed",
		"COMMTUNE_PROFILE=off", "COMMTUNE_TRANSPORTS=shm,tcp", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("mpirun: %v, want the job to fail", err)
	}
	if !regexp.MustCompile(`process rank 2 .* exited on signal 9`).Match(out) {
		t.Errorf("mpirun did not blame rank 2's SIGKILL")
	}
	// mpirun ends the job as soon as it sees the SIGKILL, and may kill a
	// survivor before it noticed the loss: the survivors that report must
	// have noticed in time, and at least one must report.
	reported := 0
	for _, r := range []int{0, 1, 3} {
		m := regexp.MustCompile(fmt.Sprintf(`(?m)^rank %d: lap \d+: rank \d lost: .*\(noticed ([0-9.]+)(ns|µs|ms|s) after the kill\)$`, r)).FindSubmatch(out)
		if m == nil {
			t.Logf("rank %d: no report (mpirun ended it first)", r)
			continue
		}
		reported++
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		if d, _ := time.ParseDuration(fmt.Sprint(v) + string(m[2])); d > 5*time.Second {
			t.Errorf("rank %d noticed the loss %v after the kill, want within 5 s", r, d)
		}
	}
	if reported == 0 {
		t.Errorf("no survivor failed with ErrPeerLost")
	}
	if left := processesOf(os.Args[0]); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
}
