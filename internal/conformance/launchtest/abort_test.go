package launchtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/launch"
)

// abortReason is what abortOne's rank gives as its reason: the tests count
// it in the job's output.
const abortReason = "giving up on purpose"

// abortOne: rank 1 aborts the job with code 7 while every other rank waits
// for a message that never comes; only the abort can end them.
func abortOne(ctx context.Context, c *commtune.Comm) error {
	if c.Rank() == 1 {
		time.Sleep(100 * time.Millisecond) // the others are waiting by then
		fmt.Printf("rank 1: aborting at %d\n", time.Now().UnixNano())
		c.Abort(7, abortReason)
		return errors.New("Abort returned")
	}
	_, err := c.Recv(ctx, nil, commtune.AnySource, 99)
	return err
}

// leftOver lists the processes still running whose environment holds
// token: the ranks of a job started with it.
func leftOver(token string) []string {
	var left []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err == nil && strings.Contains(string(env), conformance.RankArgEnv+"="+token) {
			cmd, _ := os.ReadFile(filepath.Join(d, "cmdline"))
			left = append(left, filepath.Base(d)+" "+strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " "))
		}
	}
	return left
}

// abortBound is how soon after a rank's Abort the job must have ended:
// commtune run takes a few milliseconds here, Hydra 0.2 s (the rank's
// settling pause before it asks). openMPIAbortBound is Open MPI's: its
// mpirun itself takes 1.2 s to end the job here, and 2.2 s once beside
// other packages' tests.
const (
	abortBound        = 2 * time.Second
	openMPIAbortBound = 3 * time.Second
)

// checkAborted checks a job's end (at ended) after abortOne: code want
// (any failure when want is 0), the reason printed once, within bound of
// the abort, and no rank left.
func checkAborted(t *testing.T, out string, code, want int, ended time.Time, token string, bound time.Duration) {
	t.Helper()
	if code != want && (want != 0 || code == 0) {
		t.Errorf("exit status %d, want %d\n%s", code, want, out)
	}
	if n := strings.Count(out, abortReason); n != 1 {
		t.Errorf("the reason printed %d times, want once:\n%s", n, out)
	}
	_, at, ok := strings.Cut(out, "aborting at ")
	ns, err := strconv.ParseInt(strings.Fields(at + " ")[0], 10, 64)
	if !ok || err != nil {
		t.Errorf("no abort time in the output:\n%s", out)
	} else if took := ended.Sub(time.Unix(0, ns)); took > bound {
		t.Errorf("the job ended %v after the abort", took)
	} else {
		t.Logf("the job ended %v after the abort", took)
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(leftOver(token)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := leftOver(token); len(left) > 0 {
		t.Errorf("processes left after the abort: %v", left)
	}
}

// runAborted runs abortOne's job by the launcher command args, with env
// added, and checks its end (checkAborted) with the exit code want.
func runAborted(t *testing.T, want int, bound time.Duration, name string, args []string, env ...string) {
	t.Helper()
	token := fmt.Sprintf("abort-%s-%d", name, os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), append(env, conformance.RankModeEnv+"=abort", conformance.RankArgEnv+"="+token,
		"COMMTUNE_PROFILE=off", "GORACE=atexit_sleep_ms=0")...)
	out, err := cmd.CombinedOutput()
	ended := time.Now()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v\n%s", args[0], err, out)
	}
	t.Logf("%s", out)
	checkAborted(t, string(out), code, want, ended, token, bound)
}

// TestAbortCommtuneRun: under commtune run, Abort ends every rank with the
// code, the launcher printing the reason.
func TestAbortCommtuneRun(t *testing.T) {
	token := fmt.Sprintf("abort-run-%d", os.Getpid())
	out, err := conformance.RunJob(4, "abort", token)
	ended := time.Now()
	var re *launch.RankError
	code := -1
	if errors.As(err, &re) {
		code = re.ExitStatus()
		out += "\n" + err.Error() // what commtune run prints
	}
	checkAborted(t, out, code, 7, ended, token, abortBound)
}

// TestAbortHydra: under MPICH's mpiexec, over PMI-1 and PMI-2, Abort ends
// every rank. Over PMI-1 mpiexec exits with the code; Hydra's PMI-2 server
// has no abort command, so there it ends the job on the rank's exit and
// reports a status of its own (the others' SIGKILL, 9).
func TestAbortHydra(t *testing.T) {
	mpiexec, err := exec.LookPath("mpiexec.mpich")
	if err != nil {
		t.Skip("mpiexec.mpich not installed (apt-get install mpich); .ci/run installs it")
	}
	for _, c := range []struct {
		pmi  string
		want int
	}{{"1", 7}, {"2", 0}} {
		pmi := c.pmi
		t.Run("pmi"+pmi, func(t *testing.T) {
			runAborted(t, c.want, abortBound, "hydra"+pmi, []string{mpiexec, "-launcher", "fork", "-n", "4", os.Args[0]}, "COMMTUNE_PMI="+pmi)
		})
	}
}
