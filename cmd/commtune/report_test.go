package main

import (
	"bytes"
	"image"
	_ "image/png" // the figures are decoded
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/trace"
)

func TestReport(t *testing.T) {
	dir := t.TempDir()
	writeTestTrace(t, dir, "r1", 2)
	merged, err := trace.Merge(dir, filepath.Join(t.TempDir(), "merged.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
		not  []string
	}{
		{"directory", []string{dir}, []string{
			"job r1: 2 of 2 ranks, 26 spans",
			"@--- Aggregate time (top-level calls, every rank) ---",
			"Allreduce      2  9.00 µs",
			"Bcast         20  10.0 µs",
			"Send           2  1.00 µs",
			"@--- Algorithms",
			"bcast/binomial  lottery       10    50.0 %",
		}, []string{"Call site"}},
		{"merged file, sites", []string{merged, "--sites"}, []string{"job r1: 2 of 2 ranks", "@--- Call site time ---", "main.go:12 main.main"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, append([]string{"report"}, tc.args...)...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Fatalf("no %q in\n%s", w, r.stdout)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(r.stdout, n) {
					t.Fatalf("%q in\n%s", n, r.stdout)
				}
			}
		})
	}
}

func TestReportPlot(t *testing.T) {
	dir := t.TempDir()
	writeTestTrace(t, dir, "p1", 2)
	out := filepath.Join(t.TempDir(), "figs")
	for _, tc := range []struct {
		name   string
		args   []string
		format string
		outDir string
	}{
		{"beside the trace", []string{dir, "--plot"}, "png", dir},
		{"--out, svg", []string{"--plot", "--format", "svg", "--out", out, dir}, "svg", out},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, append([]string{"report"}, tc.args...)...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			var want []string
			for _, f := range []string{"timeline", "ops-per-rank", "algorithms"} {
				want = append(want, filepath.Join(tc.outDir, f+"."+tc.format))
			}
			if !strings.HasSuffix(r.stdout, "\n\n"+strings.Join(want, "\n")+"\n") {
				t.Fatalf("stdout does not end with the figures %v:\n%s", want, r.stdout)
			}
			for _, p := range want {
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if tc.format == "png" {
					if _, _, err := image.Decode(bytes.NewReader(data)); err != nil {
						t.Fatalf("%s: %v", p, err)
					}
				} else if !bytes.Contains(data, []byte("<svg")) {
					t.Fatalf("%s: not an SVG", p)
				}
			}
		})
	}
}

func TestReportErrors(t *testing.T) {
	dir := t.TempDir()
	writeTestTrace(t, dir, "e1", 2)
	empty := t.TempDir()
	foreign := filepath.Join(empty, "chrome.json")
	os.WriteFile(foreign, []byte(`{"traceEvents":[],"otherData":{"tool":"chrome"}}`), 0o644)
	crashed := t.TempDir()
	writeTestTrace(t, crashed, "e2", 3)
	tmp := filepath.Join(crashed, ".commtune-trace-e2-rank-1.json.tmp")
	os.Rename(filepath.Join(crashed, trace.RankFileName("e2", 1)), tmp)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no trace", nil, 2, []string{"want one trace"}},
		{"bad format", []string{dir, "--plot", "--format", "gif"}, 2, []string{`--format "gif": want png or svg`}},
		{"--out without --plot", []string{dir, "--out", empty}, 2, []string{"add --plot"}},
		{"missing", []string{filepath.Join(empty, "absent")}, 1, []string{"absent: no such file or directory"}},
		{"no trace files", []string{t.TempDir()}, 1, []string{"no commtune trace files"}},
		{"foreign file", []string{foreign}, 1, []string{foreign + ": not a commtune trace: no otherData.format"}},
		{"a rank crashed", []string{crashed}, 1, []string{"rank 1 left only .commtune-trace-e2-rank-1.json.tmp: the rank did not close its communicator"}},
		{"its temporary file", []string{tmp}, 1, []string{"the temporary file of rank 1 of job e2: the rank did not close its communicator"}},
		{"another job", []string{dir, "--job", "zz"}, 1, []string{"no commtune trace files of job zz (jobs here: e1)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, append([]string{"report"}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Fatalf("stderr %q lacks %q", r.stderr, w)
				}
			}
		})
	}
}
