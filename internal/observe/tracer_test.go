package observe

import (
	"context"
	"testing"

	"github.com/commtune/commtune/internal/trace"
)

// TestTracerWritesEverySpan records more spans than the tracer holds in
// memory and more than a batch, from a recorder as calls would, and reads
// them all back from the rank's file, in their lanes, none dropped.
func TestTracerWritesEverySpan(t *testing.T) {
	defer func(n int) { heldBatches = n }(heldBatches)
	heldBatches = 2
	dir := t.TempDir()
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
	seen := make([]bool, calls)
	for _, sp := range job.Spans[0] {
		if sp.Lane != 0 || sp.Name != "TestA" || sp.Alg != "a/x" || sp.Bytes < 0 || sp.Bytes >= calls || seen[sp.Bytes] {
			t.Fatalf("span %+v: want each call once, on lane 0", sp)
		}
		seen[sp.Bytes] = true
	}
}
