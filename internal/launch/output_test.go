package launch

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestCopyLines(t *testing.T) {
	long := strings.Repeat("x", maxLine+10)
	tests := []struct {
		name   string
		in     string
		prefix bool
		want   string
	}{
		{"empty", "", true, ""},
		{"lines", "a\nb\n", false, "a\nb\n"},
		{"prefixed", "a\nb\n", true, "[3] a\n[3] b\n"},
		{"empty lines", "\n\n", true, "[3] \n[3] \n"},
		{"unterminated last line", "a\nb", false, "a\nb"},
		{"unterminated last line, prefixed", "a\nb", true, "[3] a\n[3] b\n"},
		{"long line, prefixed once", long + "\nz\n", true, "[3] " + long + "\n[3] z\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got bytes.Buffer
			o := &output{prefix: tc.prefix, log: slog.New(slog.DiscardHandler)}
			o.copyLines(3, strings.NewReader(tc.in), &got)
			if got.String() != tc.want {
				t.Fatalf("got %q, want %q", abbrev(got.String()), abbrev(tc.want))
			}
		})
	}
}

// TestCopyLinesWholeLines: every Write carries whole lines (or one chunk
// of an over-long line), which is what keeps ranks from interleaving.
func TestCopyLinesWholeLines(t *testing.T) {
	var w writeRecorder
	o := &output{prefix: true, log: slog.New(slog.DiscardHandler)}
	o.copyLines(0, strings.NewReader("one\ntwo\nthree"), &w)
	want := []string{"[0] one\n", "[0] two\n", "[0] three\n"}
	if strings.Join(w.writes, "|") != strings.Join(want, "|") {
		t.Fatalf("writes %q, want %q", w.writes, want)
	}
}

type writeRecorder struct{ writes []string }

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func abbrev(s string) string {
	if len(s) > 80 {
		return s[:40] + "…" + s[len(s)-40:]
	}
	return s
}
