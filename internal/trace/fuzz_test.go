package trace

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"github.com/commtune/commtune/internal/fuzzseed"
)

// FuzzRead checks that reading never panics, that Read and Validate agree
// on what they accept, and that what they accept is a sound Job that a
// merged file carries unchanged. The seed corpus is
// testdata/fuzz/FuzzRead (see TestFuzzReadSeeds).
func FuzzRead(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := readData(bytes.NewReader(data), int64(len(data)))
		if verr := Validate(data); (err == nil) != (verr == nil) {
			t.Fatalf("read: %v; Validate: %v", err, verr)
		}
		if err != nil {
			return
		}
		if len(j.Ranks) == 0 || len(j.Spans) != len(j.Ranks) {
			t.Fatalf("%d ranks, %d span lists", len(j.Ranks), len(j.Spans))
		}
		for i, r := range j.Ranks {
			if i > 0 && r.Rank <= j.Ranks[i-1].Rank || r.Rank >= r.Size || r.Job != j.ID {
				t.Fatalf("ranks %+v", j.Ranks)
			}
			if !slices.IsSortedFunc(j.Spans[i], compareSpans) || int64(len(j.Spans[i])) != r.Spans {
				t.Fatalf("rank %d: spans unsorted or miscounted", r.Rank)
			}
			for _, s := range j.Spans[i] {
				if s.End < s.Start || s.Name == "" || s.Lane < 0 {
					t.Fatalf("rank %d: span %+v", r.Rank, s)
				}
			}
		}
		var b bytes.Buffer
		if err := encodeMerged(&b, j); err != nil {
			t.Fatal(err)
		}
		back, err := readData(bytes.NewReader(b.Bytes()), int64(b.Len()))
		if err != nil {
			t.Fatalf("merged file of an accepted trace: %v\n%s", err, b.Bytes())
		}
		if !reflect.DeepEqual(back, j) {
			t.Fatalf("merged file reads back as\n%+v\nnot\n%+v", back, j)
		}
	})
}

// TestFuzzReadSeeds keeps testdata/fuzz/FuzzRead in step with the files
// this package writes (go test -run FuzzReadSeeds -rewrite-seeds): a rank
// file, a merged file, the same cut short, a foreign trace and lanes that
// overlap.
func TestFuzzReadSeeds(t *testing.T) {
	dir := t.TempDir()
	writeJob(t, dir, "fuzz", 2)
	rank := readFileBytes(t, dir+"/"+RankFileName("fuzz", 1))
	merged, err := Merge(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	a := ev("Allreduce", "1.000", "5.000", 0, `,"args":{"bytes":8,"alg":"allreduce/ring","by":"table"}`)
	seeds := []fuzzseed.Seed{
		{Name: "rank", Values: []any{rank}},
		{Name: "merged", Values: []any{readFileBytes(t, merged)}},
		{Name: "cut-short", Values: []any{rank[:len(rank)*2/3]}},
		{Name: "foreign", Values: []any{[]byte(`{"traceEvents":[{"name":"a","ph":"B","ts":1,"pid":9,"tid":9}],"displayTimeUnit":"ms","otherData":{"version":"x"}}`)}},
		{Name: "overlapping-lanes", Values: []any{[]byte(doc(rankOther(2), meta, a, ev("Send", "3.000", "9.000", 0, "")))}},
		{Name: "nested-lanes", Values: []any{[]byte(doc(rankOther(3), meta, a, ev("Send", "3.000", "1.5", 0, ""), ev("Send", "3", "9e0", 1, "")))}},
		{Name: "version-2", Values: []any{[]byte(doc(`{"format":"commtune-trace-merged","version":2,"job":"j","ranks":[]}`))}},
	}
	fuzzseed.Sync(t, "FuzzRead", seeds)
}
