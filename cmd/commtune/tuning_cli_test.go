package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/testenv"
)

// TestSampleQuick runs a quick pass over TCP into a file: a valid profile of
// this platform, and its selection printed.
func TestSampleQuick(t *testing.T) {
	testenv.SkipUnderRace(t, "an end-to-end run of the sample command")
	out := filepath.Join(t.TempDir(), "p.json")
	r := runCLI(t, "sample", "--quick", "--transports", "tcp", "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout, "profile written to "+out) || !strings.Contains(r.stdout, "\ntcp  0..") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	fp, _, err := config.Platform()
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Load(out, fp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Tune("tcp", nil); err != nil || !p.Quick || p.Host[profile.Memcpy] == nil {
		t.Fatalf("profile %+v: %v", p, err)
	}
	if !strings.Contains(r.stderr, "sampling tcp") {
		t.Errorf("no progress shown: %q", r.stderr)
	}
}

// TestSampleInterrupted: Ctrl-C during a pass writes nothing, not even a
// temporary file.
func TestSampleInterrupted(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "p.json")
	cmd := cliCommand("sample", "--out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(stderr.String(), "interrupted; no profile written") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 0 {
		t.Fatalf("files left: %v", names)
	}
}

func TestSampleFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sample", "--transports", "udp"}, `--transports: "udp" is not one of shm, tcp`},
		{[]string{"sample", "extra"}, `unexpected argument "extra"`},
		{[]string{"sample"}, "COMMTUNE_PROFILE=off: give --out FILE"},
	} {
		if r := runCLI(t, tc.args...); r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// TestSweepAndDemo run the sweep and the demo on a profile whose
// thresholds are known, briefly.
func TestSweepAndDemo(t *testing.T) {
	testenv.SkipReduced(t, "end-to-end runs of bench sweep and the demo")
	path := filepath.Join(t.TempDir(), "p.json")
	if err := lineProfile(t).Save(path); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) cliResult {
		cmd := cliCommand(args...)
		cmd.Env = append(cmd.Env, "COMMTUNE_PROFILE="+path)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		return cliResult{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
	}
	r := run("bench", "sweep", "--transports", "tcp", "--runs", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "# commtune bench sweep over tcp, 2 ranks, 1 run(s)") ||
		!strings.Contains(r.stdout, " 191.4K ") || !strings.Contains(r.stdout, "# tuned is at most") {
		t.Fatalf("sweep: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The line profile's thresholds are not this machine's: tuned may lose
	// on it, and the demo must then fail and say where.
	r = run("demo", "--rounds", "1")
	lost := r.code == 1 && strings.Contains(r.stderr, "tuned was slower beyond noise on ") && strings.Contains(r.stdout, "slower beyond noise on ")
	if (r.code != 0 && !lost) || !strings.Contains(r.stdout, "Using the profile of this machine, "+path) ||
		!strings.Contains(r.stdout, "allreduce") || !strings.Contains(r.stdout, "Where the profile chose differently") {
		t.Fatalf("demo: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "bench", "sweep"); r.code != 1 || !strings.Contains(r.stderr, "run `commtune sample` first") {
		t.Fatalf("sweep without a profile: exit %d, %q", r.code, r.stderr)
	}
}
