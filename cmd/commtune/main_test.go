package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// With cliEnv set, the test binary is the commtune command (TestMain), so
// tests check real exit statuses and output.
const cliEnv = "COMMTUNE_CLI_TEST"

func TestMain(m *testing.M) {
	if os.Getenv(cliEnv) != "" {
		os.Exit(dispatch(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// cliCommand returns a command that runs the CLI with args.
func cliCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	// A race-enabled binary sleeps a second at exit unless told not to.
	// No tuning profile of the machine running the tests: every run sees
	// the same defaults (tests of the profile set their own).
	cmd.Env = append(os.Environ(), cliEnv+"=1", "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"), "COMMTUNE_PROFILE=off",
		"COMMTUNE_TUNE_STATE=off")
	return cmd
}

type cliResult struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	cmd := cliCommand(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running the CLI: %v", err)
	}
	return cliResult{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

func TestDispatch(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStdout string
		wantStderr string
	}{
		{"no arguments", nil, 2, "", "usage: commtune <command>"},
		{"help", []string{"help"}, 0, "start N ranks of a program", ""},
		{"--help", []string{"--help"}, 0, "usage: commtune <command>", ""},
		{"help run", []string{"help", "run"}, 0, "", "usage: commtune run -n N"},
		{"help unknown", []string{"help", "frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"unknown", []string{"frobnicate"}, 2, "", `commtune: unknown command "frobnicate"`},
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

func TestHiddenCommandsAreNotListed(t *testing.T) {
	register(command{name: "test-hidden", summary: "secret", run: func([]string) int { return 0 }, hidden: true})
	defer delete(commands, "test-hidden")
	var b bytes.Buffer
	usage(&b)
	if strings.Contains(b.String(), "test-hidden") {
		t.Fatalf("usage lists a hidden command:\n%s", b.String())
	}
}
