package tracereport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/trace"
)

func TestReportWriteTable(t *testing.T) {
	tests := []struct {
		name  string
		job   *trace.Job
		sites bool
		want  []string // lines, or parts of lines, in order
		not   []string
	}{
		{"two ranks", twoRanks(), false, []string{
			"job t: 2 of 2 ranks, 6 spans, 2 dropped",
			"wall time (Init to Close): 1.00 µs per rank on average, 2.00 µs over all ranks",
			"@--- Aggregate time (top-level calls, every rank) ---",
			"Operation  Calls   Total   Share    Mean  Slowest rank  its total  Imbalance",
			"Allreduce      3  500 ns  25.0 %  166 ns             1     300 ns       1.20",
			"Send           2   60 ns  3.00 %   30 ns             0      50 ns       1.67",
			"@--- Time per rank ---",
			"Rank  Allreduce   Send     All  of wall",
			"   0     200 ns  50 ns  250 ns   25.0 %",
			"   1     300 ns  10 ns  310 ns   31.0 %",
			"@--- Algorithms (every call that named one) ---",
			"Operation  Algorithm       Chosen by  Calls  of calls",
			"Allreduce  allreduce/ring  table          2    66.7 %",
			"           allreduce/rd    lottery        1    33.3 %",
			"Send       eager           direct         1   100.0 %",
		}, []string{"Call site"}},
		{"by site", twoRanks(), true, []string{
			"@--- Call site time ---",
			"Operation  Site      Calls   Total   Share    Mean  Slowest rank  its total  Imbalance",
			"Allreduce  a.go:1 f      3  500 ns  25.0 %  166 ns",
		}, nil},
		{"no calls", &trace.Job{ID: "v", Ranks: []trace.RankInfo{{Rank: 0, Size: 1, EndNs: 5e9}}, Spans: [][]trace.Span{nil}}, true,
			[]string{"job v: 1 of 1 ranks, 0 spans", "5.00 s per rank", "no calls recorded"}, []string{"@---", "dropped"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteTable(&b, Summarize(tc.job, tc.sites)); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			rest := out
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("no %q (in order) in\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Fatalf("%q in\n%s", n, out)
				}
			}
		})
	}
}

func TestReportUnits(t *testing.T) {
	for ns, want := range map[int64]string{
		0: "0 ns", 999: "999 ns", 1000: "1.00 µs", 12345: "12.3 µs", 999_499: "999 µs", 999_500: "1.00 ms",
		1_200_000: "1.20 ms", 3_510_000_000: "3.51 s", 7200e9: "7200 s", -1500: "-1.50 µs",
	} {
		if got := duration(ns); got != want {
			t.Errorf("duration(%d) = %q, want %q", ns, got, want)
		}
	}
	for share, want := range map[float64]string{0: "0.00 %", 0.0024: "0.24 %", 0.25: "25.0 %", 1.5: "150.0 %"} {
		if got := percent(share); got != want {
			t.Errorf("percent(%v) = %q, want %q", share, got, want)
		}
	}
}
