package trace

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	writeJob(t, dir, "m1", 3)
	fromRanks, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromRanks.Ranks) != 3 || fromRanks.SpanCount() != 18 {
		t.Fatalf("Read: %d ranks, %d spans", len(fromRanks.Ranks), fromRanks.SpanCount())
	}
	path, err := Merge(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "commtune-trace-m1.json"); path != want {
		t.Fatalf("Merge wrote %s, want %s", path, want)
	}
	data := readFileBytes(t, path)
	if err := Validate(data); err != nil {
		t.Fatalf("Validate(merged): %v", err)
	}

	// The spans of every rank, in order of start time.
	var f struct {
		TraceEvents []struct {
			Ph  string
			Ts  float64
			Pid int
		}
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	last, pids := -1e18, map[int]int{}
	for _, e := range f.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		if e.Ts < last {
			t.Fatalf("merged events out of order: %v after %v", e.Ts, last)
		}
		last = e.Ts
		pids[e.Pid]++
	}
	if !reflect.DeepEqual(pids, map[int]int{0: 6, 1: 6, 2: 6}) {
		t.Fatalf("spans per rank: %v", pids)
	}

	// The merged file reads as the rank files do; the directory, merged
	// file and all, still reads from its rank files.
	for _, from := range []string{path, dir} {
		j, err := Read(from)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(j, fromRanks) {
			t.Fatalf("Read(%s) differs from the rank files:\n%+v\n%+v", from, j.Ranks, fromRanks.Ranks)
		}
	}
	// Without its rank files, the directory reads from the merged file.
	for r := range 3 {
		os.Remove(filepath.Join(dir, RankFileName("m1", r)))
	}
	if j, err := Read(dir); err != nil || !reflect.DeepEqual(j, fromRanks) {
		t.Fatalf("Read of the merged file alone: %v", err)
	}
	if _, err := Merge(dir, ""); err == nil || !strings.Contains(err.Error(), "no rank files to merge") {
		t.Fatalf("Merge without rank files: %v", err)
	}

	// Elsewhere, with -o; leaving no temporary file.
	dir2 := t.TempDir()
	writeJob(t, dir2, "m2", 2)
	out := filepath.Join(t.TempDir(), "all.json")
	if p, j, err := MergeJob(dir2, "m2", out); err != nil || p != out || j.SpanCount() != 12 {
		t.Fatalf("MergeJob = %s, %v", p, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 1 {
		t.Fatalf("beside the merged file: %v", entries)
	}
}

func TestMergeRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		kind  error
		msg   string
	}{
		{"empty directory", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644)
		}, ErrNoTrace, "no commtune trace files"},
		{"two jobs", func(t *testing.T, dir string) {
			writeJob(t, dir, "a", 1)
			writeJob(t, dir, "b", 2)
		}, ErrSeveralJobs, "traces of several jobs: a, b"},
		{"a rank did not close", func(t *testing.T, dir string) {
			writeRank(t, dir, testInfo("c", 0, 3), testSpans(0))
			writeRank(t, dir, testInfo("c", 2, 3), testSpans(2))
			w, err := Create(dir, testInfo("c", 1, 3))
			if err != nil {
				t.Fatal(err)
			}
			w.Write(span("Send", 1, 2, 0))
			// Never closed: the rank crashed.
		}, ErrIncomplete, "job c has 3 ranks, 2 of them wrote their file: rank 1 left only .commtune-trace-c-rank-1.json.tmp: the rank did not close its communicator"},
		{"a rank missing", func(t *testing.T, dir string) {
			writeRank(t, dir, testInfo("d", 1, 2), nil)
		}, ErrIncomplete, "rank 0 wrote no file"},
		{"a rank file under another rank's name", func(t *testing.T, dir string) {
			writeJob(t, dir, "e", 2)
			os.Rename(filepath.Join(dir, RankFileName("e", 0)), filepath.Join(dir, RankFileName("e", 2)))
		}, ErrInvalid, "the name says rank 2 of job e, otherData rank 0 of job e"},
		{"sizes differ", func(t *testing.T, dir string) {
			writeRank(t, dir, testInfo("f", 0, 2), nil)
			writeRank(t, dir, testInfo("f", 1, 3), nil)
		}, ErrInvalid, "rank 1 says the job has 3 ranks, rank 0 says 2"},
		{"a rank file cut short", func(t *testing.T, dir string) {
			writeJob(t, dir, "g", 2)
			p := filepath.Join(dir, RankFileName("g", 1))
			data := readFileBytes(t, p)
			os.WriteFile(p, data[:len(data)/2], 0o644)
		}, ErrCutShort, "commtune-trace-g-rank-1.json: cut short: unexpected end of JSON input at byte"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			_, err := Merge(dir, "")
			if err == nil || !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Merge: %v\nwant %v with %q", err, tc.kind, tc.msg)
			}
			if _, err2 := Read(dir); err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("Read: %v\nMerge: %v", err2, err)
			}
			if !strings.HasPrefix(err.Error(), dir) {
				t.Fatalf("the error does not name the directory or file: %v", err)
			}
			if entries, _ := os.ReadDir(dir); func() bool {
				for _, e := range entries {
					if strings.HasPrefix(e.Name(), "commtune-trace-") && !strings.Contains(e.Name(), "-rank-") {
						return true
					}
				}
				return false
			}() {
				t.Fatalf("a refused merge left a merged file: %v", entries)
			}
		})
	}

	// A job picked among several.
	dir := t.TempDir()
	writeJob(t, dir, "a", 1)
	writeJob(t, dir, "b", 2)
	if j, err := ReadJob(dir, "b"); err != nil || j.ID != "b" || len(j.Ranks) != 2 {
		t.Fatalf("ReadJob(b): %v", err)
	}
	if _, _, err := MergeJob(dir, "a", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJob(dir, "z"); !errors.Is(err, ErrNoTrace) || !strings.Contains(err.Error(), "jobs here: a, b") {
		t.Fatalf("ReadJob(z): %v", err)
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	writeJob(t, dir, "r", 2)
	w, err := Create(dir, testInfo("s", 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	w.Write(span("Send", 1, 2, 0))
	w.flush()
	tmp := filepath.Join(dir, ".commtune-trace-s-rank-0.json.tmp")
	cut := filepath.Join(dir, "cut.json")
	os.WriteFile(cut, readFileBytes(t, filepath.Join(dir, RankFileName("r", 0)))[:100], 0o644)
	foreign := filepath.Join(dir, "foreign.json")
	os.WriteFile(foreign, []byte(`{"traceEvents":[],"otherData":{"tool":"other"}}`), 0o644)

	tests := []struct {
		path string
		job  string
		kind error
		msg  string
	}{
		{filepath.Join(dir, "absent"), "", fs.ErrNotExist, "absent: no such file or directory"},
		{tmp, "", ErrIncomplete, tmp + ": incomplete trace: the temporary file of rank 0 of job s: the rank did not close its communicator"},
		{cut, "", ErrCutShort, cut + ": cut short: unexpected end of JSON input at byte 100 (the file of a rank that did not finish writing it?)"},
		{foreign, "", ErrNotTrace, foreign + ": not a commtune trace: no otherData.format"},
		{filepath.Join(dir, RankFileName("r", 1)), "q", nil, "the trace of job r, not q"},
	}
	for _, tc := range tests {
		_, err := ReadJob(tc.path, tc.job)
		if err == nil || tc.kind != nil && !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ReadJob(%s, %q): %v\nwant %v with %q", tc.path, tc.job, err, tc.kind, tc.msg)
		}
	}
	if _, err := Merge(cut, ""); err == nil || !strings.Contains(err.Error(), cut+": not a directory") {
		t.Errorf("Merge of a file: %v", err)
	}
	w.Abort()
}
