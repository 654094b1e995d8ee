package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/trace"
)

// writeTestTrace writes the rank files of job, of size ranks, into dir:
// each rank an Allreduce with a Send within it, a Send on a second lane
// and a Bcast whose algorithm changes halfway, as a tuner's would.
func writeTestTrace(t *testing.T, dir, job string, size int) {
	t.Helper()
	for r := range size {
		w, err := trace.Create(dir, trace.RankInfo{Job: job, Rank: r, Size: size, Host: "node", PID: 100 + r})
		if err != nil {
			t.Fatal(err)
		}
		span := func(name, cat string, start, end int64, lane int) trace.Span {
			return trace.Span{Name: name, Cat: cat, Start: start, End: end, Lane: lane, Bytes: 8, Peer: trace.None, Root: trace.None,
				Site: "main.go:12 main.main"}
		}
		inner := span("Send", "p2p", 1100, 1200, 0)
		outer := span("Allreduce", "coll", 1000, 5000+int64(r)*1000, 0)
		outer.Alg, outer.By = "allreduce/ring", "table"
		side := span("Send", "p2p", 2000, 2500, 1)
		side.Peer = (r + 1) % size
		spans := []trace.Span{inner, side, outer}
		for i := range 10 {
			b := span("Bcast", "coll", 10000+int64(i)*1000, 10500+int64(i)*1000, 0)
			b.Root, b.Alg, b.By = 0, "bcast/binomial", "lottery"
			if i >= 5 {
				b.Alg, b.By = "bcast/pipeline", "learned"
			}
			spans = append(spans, b)
		}
		for _, s := range spans {
			if err := w.Write(s); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(30000, 0); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTraceMerge(t *testing.T) {
	tests := []struct {
		name string
		args func(dir string) []string
		want func(dir string) string // the merged file
	}{
		{"default", func(dir string) []string { return []string{dir} }, func(dir string) string { return filepath.Join(dir, "commtune-trace-j1.json") }},
		{"-o after", func(dir string) []string { return []string{dir, "-o", filepath.Join(dir, "x.json")} }, func(dir string) string { return filepath.Join(dir, "x.json") }},
		{"--job before", func(dir string) []string { return []string{"--job", "j1", dir} }, func(dir string) string { return filepath.Join(dir, "commtune-trace-j1.json") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTestTrace(t, dir, "j1", 3)
			r := runCLI(t, append([]string{"trace", "merge"}, tc.args(dir)...)...)
			want := tc.want(dir)
			if r.code != 0 || r.stderr != "" || r.stdout != want+"\njob j1: 3 ranks, 39 spans\n" {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
			}
			data, err := os.ReadFile(want)
			if err != nil {
				t.Fatal(err)
			}
			if err := trace.Validate(data); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTraceMergeErrors(t *testing.T) {
	dir := t.TempDir()
	writeTestTrace(t, dir, "a", 2)
	writeTestTrace(t, dir, "b", 1)
	empty := t.TempDir()
	broken := t.TempDir()
	writeTestTrace(t, broken, "c", 2)
	os.WriteFile(filepath.Join(broken, trace.RankFileName("c", 1)), []byte(`{"traceEvents":[{"name":"Send","ph":"X"`), 0o644)
	tests := []struct {
		name string
		args []string
		code int
		want []string // in stderr
	}{
		{"no directory", []string{"merge"}, 2, []string{"want one directory", `run "commtune help trace"`}},
		{"no subcommand", nil, 2, []string{"want a subcommand: merge"}},
		{"two directories", []string{"merge", dir, empty}, 2, []string{"got 2 arguments"}},
		{"bad flag", []string{"merge", "--frob", dir}, 2, []string{"flag provided but not defined: -frob"}},
		{"missing directory", []string{"merge", filepath.Join(dir, "absent")}, 1, []string{filepath.Join(dir, "absent") + ": no such file or directory"}},
		{"no trace files", []string{"merge", empty}, 1, []string{empty + ": no commtune trace files"}},
		{"two jobs", []string{"merge", dir}, 1, []string{"traces of several jobs: a, b", "give --job ID"}},
		{"cut short", []string{"merge", broken}, 1, []string{"commtune-trace-c-rank-1.json: cut short", "did not finish"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, append([]string{"trace"}, tc.args...)...)
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
	if r := runCLI(t, "trace", "merge", "--job", "b", dir); r.code != 0 || !strings.Contains(r.stdout, "job b: 1 ranks") {
		t.Fatalf("--job b: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
}
