package trace

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestWriteRead(t *testing.T) {
	tests := []struct {
		name  string
		info  RankInfo
		spans []Span
	}{
		{"every kind of span", testInfo("job-1", 2, 4), testSpans(2)},
		{"no spans", testInfo("j", 0, 1), nil},
		{"negative times", testInfo("j.2", 1, 2), []Span{span("Barrier", -5001, -1, 0), span("Barrier", -1, 3, 0)}},
		{"huge times", testInfo("j_3", 0, 1), []Span{span("Recv", 1<<60, 1<<60+999_999_999_999, 3)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeRank(t, dir, tc.info, tc.spans)
			if err := Validate(readFileBytes(t, path)); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			want := tc.info
			want.EndNs, want.Dropped, want.Spans = tc.info.StartNs+20000, 3, int64(len(tc.spans))
			wantSpans := slices.Clone(tc.spans)
			sortSpans(wantSpans)
			from := []string{path}
			if tc.info.Size == 1 {
				from = append(from, dir) // a directory must hold every rank
			}
			for _, from := range from {
				j, err := Read(from)
				if err != nil {
					t.Fatalf("Read(%s): %v", from, err)
				}
				if j.ID != tc.info.Job || !reflect.DeepEqual(j.Ranks, []RankInfo{want}) {
					t.Fatalf("Read(%s): job %q ranks %+v; want %q %+v", from, j.ID, j.Ranks, tc.info.Job, want)
				}
				if len(j.Spans) != 1 || len(j.Spans[0]) != len(wantSpans) || len(wantSpans) > 0 && !reflect.DeepEqual(j.Spans[0], wantSpans) {
					t.Fatalf("Read(%s): spans\n%+v\nwant\n%+v", from, j.Spans, wantSpans)
				}
			}
		})
	}
}

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	info := testInfo("atomic", 1, 2)
	final := filepath.Join(dir, RankFileName("atomic", 1))
	tmp := filepath.Join(dir, ".commtune-trace-atomic-rank-1.json.tmp")
	w, err := Create(dir, info)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range byEnd(testSpans(1)) {
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(final); !os.IsNotExist(err) {
		t.Fatalf("%s exists before Close (%v)", final, err)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("no temporary file while writing: %v", err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "did not close its communicator") {
		t.Fatalf("Read of a directory with only a temporary file: %v", err)
	}
	if err := w.Close(5000, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("temporary file left after Close (%v)", err)
	}
	if err := w.Write(span("Send", 1, 2, 0)); err == nil {
		t.Fatal("Write after Close succeeded")
	}
	if err := w.Close(5000, 0); err == nil {
		t.Fatal("second Close succeeded")
	}
	w.Abort() // after Close: nothing to do
	if _, err := os.Stat(final); err != nil {
		t.Fatal(err)
	}

	// Abort leaves nothing.
	dir = t.TempDir()
	w, err = Create(dir, info)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(span("Send", 1, 2, 0)); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("Abort left %v", entries)
	}
	if err := w.Close(1, 0); err == nil {
		t.Fatal("Close after Abort succeeded")
	}
}

func TestWriteRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, info := range []RankInfo{
		{Job: "", Rank: 0, Size: 1},
		{Job: "a/b", Rank: 0, Size: 1},
		{Job: "..", Rank: 0, Size: 1},
		{Job: "j", Rank: 1, Size: 1},
		{Job: "j", Rank: -1, Size: 1},
		{Job: "j", Rank: 0, Size: 0},
	} {
		if _, err := Create(dir, info); err == nil {
			t.Errorf("Create(%+v) succeeded", info)
		}
	}
	if _, err := Create(filepath.Join(dir, "absent"), testInfo("j", 0, 1)); err == nil {
		t.Error("Create in a missing directory succeeded")
	}
	w, err := Create(dir, testInfo("j", 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Span{span("", 1, 2, 0), span("Send", 2, 1, 0), span("Send", 1, 2, -1)} {
		if err := w.Write(s); err == nil {
			t.Errorf("Write(%+v) succeeded", s)
		}
	}
	if err := w.Close(10, 0); err != nil {
		t.Fatal(err)
	}
	if j, err := Read(dir); err != nil || j.SpanCount() != 0 {
		t.Fatalf("after refused spans: %v, %d spans", err, j.SpanCount())
	}
}

// TestWriteAllocs checks a span costs no allocation: a rank writes one
// per call.
func TestWriteAllocs(t *testing.T) {
	w, err := Create(t.TempDir(), testInfo("j", 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	s := testSpans(0)[3]
	if n := testing.AllocsPerRun(1000, func() { w.Write(s) }); n != 0 {
		t.Fatalf("Write allocates %.1f times per span", n)
	}
}

func TestMicros(t *testing.T) {
	tests := []struct {
		ns   int64
		text string
	}{
		{0, "0.000"},
		{1, "0.001"},
		{999, "0.999"},
		{1000, "1.000"},
		{1203417, "1203.417"},
		{-1, "-0.001"},
		{-1234567, "-1234.567"},
		{math.MaxInt64, "9223372036854775.807"},
		{math.MinInt64, "-9223372036854775.808"},
	}
	for _, tc := range tests {
		if got := micros(tc.ns); got != tc.text {
			t.Errorf("micros(%d) = %q, want %q", tc.ns, got, tc.text)
		}
		if tc.ns > -1e18 && tc.ns < 1e18 {
			if back, err := parseMicros([]byte(tc.text)); err != nil || back != tc.ns {
				t.Errorf("parseMicros(%q) = %d, %v; want %d", tc.text, back, err, tc.ns)
			}
		}
	}
	for text, want := range map[string]int64{"1": 1000, "1.5": 1500, "0.0004": 0, "0.0005": 1, "1e3": 1000000, "-2.25": -2250, "12.3456": 12346} {
		if got, err := parseMicros([]byte(text)); err != nil || got != want {
			t.Errorf("parseMicros(%q) = %d, %v; want %d", text, got, err, want)
		}
	}
	for _, text := range []string{"1e300", `"1"`, "true", "[1]", ""} {
		if _, err := parseMicros([]byte(text)); err == nil {
			t.Errorf("parseMicros(%s) succeeded", text)
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote\back`, "new\nline\ttab\r\x00\x1f\x7f", "é ü 中", "\u2028\u2029", "bad \xff\xfe utf8", "\xe2\x82"} {
		var got, want string
		if err := json.Unmarshal(appendString(nil, s), &got); err != nil {
			t.Errorf("appendString(%q) = %s: %v", s, appendString(nil, s), err)
			continue
		}
		ref, _ := json.Marshal(s)
		json.Unmarshal(ref, &want)
		if got != want {
			t.Errorf("appendString(%q) reads back as %q, encoding/json's as %q", s, got, want)
		}
	}
}

// refusing is a file whose file system refuses some writes, as a full
// disk does: it writes half the bytes and fails.
type refusing struct {
	*os.File
	fail     func(call int) bool // which WriteAt calls fail, from 0
	calls    int
	truncErr error
}

func (r *refusing) WriteAt(b []byte, off int64) (int, error) {
	call := r.calls
	r.calls++
	if r.fail(call) {
		n, _ := r.File.WriteAt(b[:len(b)/2], off)
		return n, syscall.ENOSPC
	}
	return r.File.WriteAt(b, off)
}

func (r *refusing) Truncate(size int64) error {
	if r.truncErr != nil {
		return r.truncErr
	}
	return r.File.Truncate(size)
}

func TestWriteRefused(t *testing.T) {
	const n = 5000 // a few buffers' worth
	s := testSpans(0)[3]
	never := func(int) bool { return false }
	tests := []struct {
		name     string
		writing  func(call int) bool // the writes refused while spans are written
		closing  int                 // the write of Close refused: 0 the last spans', 1 the tail's, -1 none
		truncErr error
		errors   bool // Write calls fail
		lost     bool // some spans lost, the file whole
		noFile   bool
	}{
		{"all written", never, -1, nil, false, false, false},
		{"one buffer refused", func(call int) bool { return call == 1 }, -1, nil, true, true, false},
		{"the last spans refused at Close", never, 0, nil, false, true, false},
		{"the tail refused", never, 1, nil, false, false, true},
		{"cannot cut back", func(call int) bool { return call == 1 }, -1, errors.New("read-only"), true, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := Create(dir, testInfo("full", 0, 1))
			if err != nil {
				t.Fatal(err)
			}
			r := &refusing{File: w.f.(*os.File), fail: tc.writing, truncErr: tc.truncErr}
			w.f = r
			failed := 0
			for i := range n {
				s.Start, s.End = int64(i)*100, int64(i)*100+50
				if w.Write(s) != nil {
					failed++
				}
			}
			if (failed > 0) != tc.errors {
				t.Fatalf("%d writes failed", failed)
			}
			if len(w.buf) == 0 && tc.truncErr == nil {
				t.Fatal("nothing left to write at Close")
			}
			if tc.closing >= 0 {
				at := r.calls + tc.closing
				r.fail = func(call int) bool { return call == at }
			}
			err = w.Close(1e6, 2)
			if tc.noFile {
				if err == nil {
					t.Fatal("Close succeeded")
				}
				if entries, _ := os.ReadDir(dir); len(entries) != 0 {
					t.Fatalf("left %v", entries)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			j, err := Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			info := j.Ranks[0]
			if info.Spans+info.Dropped != n+2 || (info.Dropped > 2) != tc.lost {
				t.Fatalf("%d spans, %d dropped: want %d in all, lost %v", info.Spans, info.Dropped, n+2, tc.lost)
			}
		})
	}
}
