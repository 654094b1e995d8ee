package observe

import (
	"context"
	"testing"

	"github.com/commtune/commtune/internal/trace"
)

// TestTracerWritesEverySpan records more spans than the tracer holds in
// memory and more than a batch, from a recorder as calls would, and reads
// them all back from the rank's file, in order, in their lanes, none
// dropped: with the rest spilled to a temporary file, and with no
// temporary directory to spill to (then encoded as the run goes).
func TestTracerWritesEverySpan(t *testing.T) {
	for _, tc := range []struct{ name, tmpdir string }{
		{"spilled", ""},
		{"no temporary directory", "/nonexistent/commtune-test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(n int) { heldBatches = n }(heldBatches)
			heldBatches = 2
			dir := t.TempDir()
			if tc.tmpdir != "" {
				t.Setenv("TMPDIR", tc.tmpdir) // after the test's own directory is made
			}
			r := NewRecorder(0, true, false)
			if err := r.StartTrace(dir, trace.RankInfo{Job: "t", Rank: 0, Size: 1, Host: "h", PID: 1}, 0); err != nil {
				t.Fatal(err)
			}
			s := benchSubject{NewCounters(1)}
			const calls = 5*batchSpans + 17
			for i := range calls {
				tok := r.Begin(testOpA, s)
				r.End(context.Background(), tok, s, &Call{Op: testOpA, Bytes: int64(i), Peer: NoRank, WorldPeer: NoRank, WorldRoot: NoRank, Alg: "a/x", By: "table"})
			}
			if err := r.StopTrace(); err != nil {
				t.Fatal(err)
			}
			job, err := trace.ReadChecked(dir, 1)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(job.Spans[0]); n != calls || job.Ranks[0].Dropped != 0 {
				t.Fatalf("%d spans read, %d dropped; want %d, 0", n, job.Ranks[0].Dropped, calls)
			}
			for i, sp := range job.Spans[0] {
				if sp.Lane != 0 || sp.Name != "TestA" || sp.Alg != "a/x" || sp.Bytes != int64(i) {
					t.Fatalf("span %d: %+v: want each call once, in order, on lane 0", i, sp)
				}
			}
		})
	}
}
