package main

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/exampletest"
	"github.com/commtune/commtune/internal/trace"
	"github.com/commtune/commtune/internal/tracereport"
)

func TestMain(m *testing.M) {
	exampletest.RankMain(main)
	os.Exit(m.Run())
}

// clockSkewLimit is how far apart the ranks' clocks may be on one node,
// where they read one clock and the alignment only measures its own
// error.
const clockSkewLimit = 10_000 // ns

// TestTimeline runs the example on 4 processes over shared memory and
// over TCP with COMMTUNE_TRACE: every rank's file and the merged one pass
// the format's checks, each rank's calls are its halo exchanges and allreduces in the
// program's order, the clocks agree within 10 µs, and the report's total
// per operation and rank is what the rank measured around the same calls
// (-timing). The bound there is loose (a quarter): the program's own
// reading includes the clock reads and any preemption between them and
// the library's, which a loaded test machine makes large; the note on
// docs/trace.md gives a quiet machine's figures.
func TestTimeline(t *testing.T) {
	const n, iters = 4, 40
	timing := regexp.MustCompile(`(?m)^\[\d+\] jacobi3d timing: rank (\d+) HaloExchange (\d+) calls (\d+) ns, Allreduce (\d+) calls (\d+) ns$`)
	for _, tr := range conformance.Transports {
		t.Run(tr.Name, func(t *testing.T) {
			dir := t.TempDir()
			out, _, err := exampletest.Job(n, []string{"-iters", strconv.Itoa(iters), "-timing", "-grid", "24x24x24"}, tr.Env, "COMMTUNE_TRACE="+dir)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			job, err := trace.ReadChecked(dir, n)
			if err != nil {
				t.Fatal(err)
			}
			// The job's one file, as commtune run or trace merge writes it.
			merged, _, err := trace.MergeJob(dir, job.ID, "")
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(merged)
			if err != nil {
				t.Fatal(err)
			}
			if err := trace.Validate(data); err != nil {
				t.Fatalf("%s: %v", merged, err)
			}
			for r, spans := range job.Spans {
				info := job.Ranks[r]
				if info.ClockOffsetNs > clockSkewLimit || info.ClockOffsetNs < -clockSkewLimit {
					t.Errorf("rank %d: clock %d ns off rank 0's on one node (error bound %d ns)", r, info.ClockOffsetNs, info.ClockErrorNs)
				}
				// The loop's exchange and allreduce in turn, then the check's allreduce.
				var names []string
				for _, s := range spans {
					names = append(names, s.Name)
				}
				if len(names) != 2*iters+1 {
					t.Fatalf("rank %d: %d spans, want %d: %v", r, len(names), 2*iters+1, names)
				}
				for i, name := range names {
					want := "Allreduce"
					if i%2 == 0 && i < 2*iters {
						want = "HaloExchange"
					}
					if name != want {
						t.Fatalf("rank %d: span %d is %s, want %s: %v", r, i, name, want, names)
					}
				}
			}
			rep := tracereport.Summarize(job, false)
			matches := timing.FindAllStringSubmatch(out, -1)
			if len(matches) != n {
				t.Fatalf("%d timing lines, want %d\n%s", len(matches), n, out)
			}
			for _, m := range matches {
				r, _ := strconv.Atoi(m[1])
				for _, c := range []struct {
					op          string
					calls, nsec string
				}{{"HaloExchange", m[2], m[3]}, {"Allreduce", m[4], m[5]}} {
					own, _ := strconv.ParseFloat(c.nsec, 64)
					got := float64(rankTotal(t, rep, c.op, r))
					t.Logf("rank %d %s: %s calls, program measured %.3f ms, report %.3f ms (%.2f %%)", r, c.op, c.calls, own/1e6, got/1e6, 100*(got/own-1))
					if got > own || got < 0.75*own {
						t.Errorf("rank %d %s: report says %.0f ns, the program measured %.0f ns around the same calls", r, c.op, got, own)
					}
				}
			}
		})
	}
}

// rankTotal is the report's time of op on rank.
func rankTotal(t *testing.T, rep tracereport.Report, op string, rank int) int64 {
	t.Helper()
	for o, name := range rep.PerRank.Ops {
		for i, r := range rep.PerRank.Ranks {
			if name == op && r == rank {
				return rep.PerRank.Total[o][i]
			}
		}
	}
	t.Fatalf("the report has no %s on rank %d", op, rank)
	return 0
}
