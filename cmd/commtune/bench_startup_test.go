package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/bench"
)

func TestBenchStartupFlags(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStderr string
	}{
		{"bad size", []string{"-n", "8,lots"}, 2, `-n: "lots": want job sizes from 1 to 1024 ranks`},
		{"zero ranks", []string{"-n", "0"}, 2, `-n: "0"`},
		{"too many ranks", []string{"-n", "8,2000"}, 2, `-n: "2000"`},
		{"empty size", []string{"-n", "8,,32"}, 2, `-n: ""`},
		{"bad transport", []string{"--transport", "inproc"}, 2, `--transport "inproc": want auto, tcp or shm`},
		{"zero rounds", []string{"--rounds", "0"}, 2, "--rounds must be at least 1"},
		{"unknown MPI", []string{"-n", "2", "--vs", "lam"}, 1, `--vs lam: unknown MPI "lam"`},
		{"rank without a start", nil, 2, bench.EnvStartupStart + `="": want the launch's start`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "startup"}, tc.args...)
			if tc.args == nil {
				args = []string{"bench-rank", "startup"}
			}
			r := runCLI(t, args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.wantStderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, tc.code, tc.wantStderr)
			}
		})
	}
}

// startupReport runs bench startup --json with args and extra environment
// and decodes its report.
func startupReport(t *testing.T, env []string, args ...string) (bench.StartupReport, cliResult) {
	t.Helper()
	cmd := cliCommand(append([]string{"bench", "startup", "--json"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running the CLI: %v", err)
	}
	r := cliResult{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
	var rep bench.StartupReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("exit %d, %v: stdout %q, stderr %s", r.code, err, r.stdout, r.stderr)
	}
	return rep, r
}

// TestBenchStartupJSON launches small jobs over each transport and checks
// the report: a row per size, each with one launch whose first
// collective came before its end.
func TestBenchStartupJSON(t *testing.T) {
	for _, tc := range []struct {
		transport, n string
		sizes        []int
	}{
		{"shm", "2,3", []int{2, 3}},
		{"tcp", "2", []int{2}},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			rep, r := startupReport(t, nil, "-n", tc.n, "--transport", tc.transport)
			if r.code != 0 {
				var why []string
				for _, row := range rep.Rows {
					if row.Commtune.Error != "" {
						why = append(why, fmt.Sprintf("n=%d: %s", row.Ranks, row.Commtune.Error))
					}
				}
				t.Fatalf("exit %d: %s\n%s", r.code, strings.Join(why, "\n"), r.stderr)
			}
			if rep.Bench != "startup" || rep.Transport != tc.transport || rep.Rounds != 1 || rep.CPUs < 1 || rep.Ref != "" || len(rep.Rows) != len(tc.sizes) {
				t.Fatalf("report %+v", rep)
			}
			for i, row := range rep.Rows {
				c := row.Commtune
				if row.Ranks != tc.sizes[i] || row.Ref != nil || c.Launches != 1 || c.Error != "" || c.WallS <= 0 ||
					c.FirstCollectiveS <= 0 || c.FirstCollectiveS > c.WallS || c.PeakPssMiB < 0 || c.ShmMiB < 0 || c.Procs > tc.sizes[i] {
					t.Errorf("row %+v", row)
				}
			}
		})
	}
}

// TestBenchStartupFailure has every rank fail Init: each size's row says
// why, every size is still launched, and the command exits 1.
func TestBenchStartupFailure(t *testing.T) {
	rep, r := startupReport(t, []string{"COMMTUNE_CONNECT_TIMEOUT=soon"}, "-n", "2,3")
	if r.code != 1 || !strings.Contains(r.stderr, "some launches failed") || len(rep.Rows) != 2 {
		t.Fatalf("exit %d, stderr %q, report %+v", r.code, r.stderr, rep)
	}
	for _, row := range rep.Rows {
		if c := row.Commtune; c.Launches != 0 || !strings.Contains(c.Error, "COMMTUNE_CONNECT_TIMEOUT") {
			t.Errorf("row %+v", row)
		}
	}
}
