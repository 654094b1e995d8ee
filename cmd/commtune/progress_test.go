package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestLineBar: off a terminal, a line when the transport changes and at
// every further tenth of the steps, none at the end (the caller reports
// that).
func TestLineBar(t *testing.T) {
	tests := []struct {
		name  string
		total int
		steps func(b bar)
		want  []string
	}{
		{"one transport, tenths", 20, func(b bar) {
			b.Describe("tcp 8")
			for n := 1; n <= 20; n++ {
				b.Set(n)
			}
		}, []string{"0", "2", "4", "6", "8", "10", "12", "14", "16", "18"}},
		{"a new transport prints at once", 100, func(b bar) {
			b.Describe("shm 8")
			b.Set(5)
			b.Describe("shm 16")
			b.Describe("tcp 8")
			b.Set(12)
		}, []string{"0", "5", "12"}},
		{"no steps", 0, func(b bar) { b.Describe("tcp"); b.Set(0) }, []string{"0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			b := newBar(&out, "sampling", tc.total)
			tc.steps(b)
			b.Finish()
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				_, rest, _ := strings.Cut(line, "(")
				n, _, _ := strings.Cut(rest, " ")
				got = append(got, n)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("lines at %v, want %v:\n%s", got, tc.want, out.String())
			}
		})
	}
}
