package trace

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// testInfo describes rank of a job of size ranks, as a writer is given it.
func testInfo(job string, rank, size int) RankInfo {
	return RankInfo{Job: job, Rank: rank, Size: size, Host: "node1", PID: 4700 + rank,
		ClockOffsetNs: int64(-512 * rank), ClockErrorNs: 900, StartNs: int64(-100 * rank)}
}

// span is a span with nothing but its name, times and lane.
func span(name string, start, end int64, lane int) Span {
	return Span{Name: name, Cat: "coll", Start: start, End: end, Lane: lane, Bytes: -1, Peer: None, Root: None}
}

// testSpans are rank's spans: calls of every family and argument,
// nested ones, a second lane, awkward strings, in start order.
func testSpans(rank int) []Span {
	off := int64(rank) * 7
	send := span("Send", 1000+off, 1500+off, 0)
	send.Cat, send.Comm, send.Bytes, send.Peer = "p2p", "world", 8, (rank+1)%3
	send.Site = "main.go:88 main.step"
	recv := span("Recv", 1600+off, 2600+off, 0)
	recv.Cat, recv.Comm, recv.Bytes, recv.Peer = "p2p", "world", 8, AnySource
	bcast := span("Bcast", 3000+off, 9000+off, 0)
	bcast.Comm, bcast.Bytes, bcast.Root, bcast.Alg, bcast.By = "dup 3", 1<<20, 0, "bcast/binomial", "table"
	inner := span("Send", 3500+off, 4000+off, 0)
	inner.Cat, inner.Peer = "p2p", 2
	other := span("Allreduce", 3200+off, 8000+off, 1)
	other.Alg, other.By, other.Bytes = "allreduce/segment", "lottery", 64
	other.Site = "odd \"site\"\n\t\x01 \u2028 é.go:1 f"
	failed := span("Wait", 9000+off, 9000+off, 0)
	failed.Cat, failed.Err = "wait", "peer lost: rank 2"
	return []Span{send, recv, bcast, other, inner, failed}
}

// byEnd returns spans in the order they end, as a rank writes them.
func byEnd(spans []Span) []Span {
	out := slices.Clone(spans)
	slices.SortStableFunc(out, func(a, b Span) int { return cmp.Compare(a.End, b.End) })
	return out
}

// writeRank writes a rank file of info and spans into dir and returns its
// path.
func writeRank(t testing.TB, dir string, info RankInfo, spans []Span) string {
	t.Helper()
	w, err := Create(dir, info)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range byEnd(spans) {
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(info.StartNs+20000, 3); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, RankFileName(info.Job, info.Rank))
}

// writeJob writes the rank files of a job of size ranks into dir.
func writeJob(t testing.TB, dir, job string, size int) {
	t.Helper()
	for r := range size {
		writeRank(t, dir, testInfo(job, r, size), testSpans(r))
	}
}

// readFileBytes returns the contents of path.
func readFileBytes(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
