//go:build linux

// The launcher these tests start is Linux only (internal/launch/proc_other.go).

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRunCommand(t *testing.T) {
	// Rank 1 fails; rank 0 would sleep, and is stopped by the launcher.
	failing := func(how string) []string {
		return []string{"sh", "-c", `if [ "$COMMTUNE_RANK" = 1 ]; then ` + how + `; fi; exec sleep 30`}
	}
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStdout string
		wantStderr string
	}{
		{"missing -n", []string{"run", "--", "true"}, 2, "", "-n must be at least 1 (got 0)"},
		{"negative -n", []string{"run", "-n", "-3", "true"}, 2, "", "-n must be at least 1 (got -3)"},
		{"-n not a number", []string{"run", "-n", "two", "true"}, 2, "", `invalid value "two" for flag -n`},
		{"no program", []string{"run", "-n", "2"}, 2, "", "no program given"},
		{"no program after --", []string{"run", "-n", "2", "--"}, 2, "", "no program given"},
		{"zero grace", []string{"run", "-n", "1", "--kill-grace", "0s", "true"}, 2, "", "--kill-grace must be positive"},
		{"more nodes than ranks", []string{"run", "-n", "2", "--nodes", "3", "true"}, 2, "", "--nodes must be from 1 to -n (got 3 for 2 ranks)"},
		{"zero nodes", []string{"run", "-n", "2", "--nodes", "0", "true"}, 2, "", "--nodes must be from 1 to -n (got 0 for 2 ranks)"},
		{"bad --env", []string{"run", "-n", "1", "--env", "NOEQUALS", "true"}, 2, "", `"NOEQUALS" is not NAME=value`},
		{"--env of a launcher variable", []string{"run", "-n", "1", "--env", "COMMTUNE_SIZE=9", "true"}, 2, "", "COMMTUNE_SIZE is set by the launcher"},
		{"unknown flag", []string{"run", "-x", "true"}, 2, "", "flag provided but not defined: -x"},
		{"success", []string{"run", "-n", "3", "--", "true"}, 0, "", ""},
		{"program not found", []string{"run", "-n", "2", "--", "/nonexistent/prog"}, 1, "", "commtune run: launch: "},
		{"environment and prefix", []string{"run", "-n", "2", "--prefix", "--env", "GREETING=hi", "--env", "X=a=b", "--",
			"sh", "-c", `echo "$GREETING $X $COMMTUNE_RANK/$COMMTUNE_SIZE $COMMTUNE_LOCAL_RANK/$COMMTUNE_LOCAL_SIZE"`},
			0, "[1] hi a=b 1/2 1/2\n", ""},
		{"a rank exits 3", append([]string{"run", "-n", "2", "--kill-grace", "100ms", "--"}, failing("exit 3")...),
			3, "", "commtune run: rank 1 exited with status 3\n"},
		{"a rank is killed", append([]string{"run", "-n", "2", "--kill-grace", "100ms", "--"}, failing("kill -9 $$")...),
			128 + 9, "", "commtune run: rank 1 killed by signal 9 (killed)\n"},
		{"--env of the keep-going variable", []string{"run", "-n", "1", "--env", "COMMTUNE_KEEP_GOING=1", "true"}, 2, "", "use --keep-going"},
		{"keep going after a killed rank", []string{"run", "-n", "3", "--keep-going", "--", "sh", "-c",
			`if [ "$COMMTUNE_RANK" = 1 ]; then kill -9 $$; fi; sleep 0.2; echo "rank $COMMTUNE_RANK keep=$COMMTUNE_KEEP_GOING"`},
			0, "rank 2 keep=1\n", "commtune run: rank 1 killed by signal 9 (killed); the job goes on without it\n"},
		{"keep going, every rank lost", []string{"run", "-n", "2", "--keep-going", "--", "sh", "-c", `exit 3`},
			3, "", "exited with status 3\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.wantStdout) || !strings.Contains(r.stderr, tc.wantStderr) {
				t.Fatalf("commtune %q: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
					tc.args, r.code, r.stdout, r.stderr, tc.code, tc.wantStdout, tc.wantStderr)
			}
		})
	}
}

// testTimeout only bounds what a bug could make hang; nothing is timed.
const testTimeout = 60 * time.Second

var readyLine = regexp.MustCompile(`^ready (\d+)$`)

// startWaitingJob starts `commtune run` with n ranks that print "ready PID"
// and sleep, and returns the CLI process and the ranks' pids once all are
// ready.
func startWaitingJob(t *testing.T, n int) (*os.Process, <-chan int, []string, *strings.Builder) {
	t.Helper()
	cmd := cliCommand("run", "-n", fmt.Sprint(n), "--", "sh", "-c", `echo ready $$; exec sleep 61`)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	var pids []string
	sc := bufio.NewScanner(stdout)
	for len(pids) < n && sc.Scan() {
		if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
			pids = append(pids, m[1])
		}
	}
	if len(pids) < n {
		t.Fatalf("only %d of %d ranks became ready", len(pids), n)
	}
	go io.Copy(io.Discard, stdout)
	code := make(chan int, 1)
	go func() {
		cmd.Wait()
		code <- cmd.ProcessState.ExitCode()
	}()
	return cmd.Process, code, pids, stderr
}

func TestRunForwardsSIGTERM(t *testing.T) {
	proc, code, pids, stderr := startWaitingJob(t, 3)
	proc.Signal(syscall.SIGTERM)
	select {
	case c := <-code:
		if c != 128+int(syscall.SIGTERM) || !strings.Contains(stderr.String(), "killed by signal 15 (terminated)") {
			t.Fatalf("exit %d, stderr %q; want 143 and a rank killed by SIGTERM", c, stderr.String())
		}
	case <-time.After(testTimeout):
		t.Fatal("commtune run did not end after SIGTERM")
	}
	for _, pid := range pids {
		if _, err := os.Stat("/proc/" + pid); err == nil {
			t.Errorf("rank process %s is still there after commtune run returned", pid)
		}
	}
}

// TestRanksDieWithTheLauncher: a launcher killed outright (no chance to
// clean up) still takes its ranks with it, through their parent-death
// signal. The test process becomes a subreaper so the orphaned ranks turn
// into its children: it can then reap them and read how they died.
func TestRanksDieWithTheLauncher(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("cannot become a subreaper: %v", err)
	}
	proc, code, pids, _ := startWaitingJob(t, 2)
	proc.Kill()
	<-code
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			t.Fatalf("waiting for rank process %d: %v", pid, err)
		}
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("rank process %d ended with %v, want killed by SIGKILL", pid, ws)
		}
	}
}
