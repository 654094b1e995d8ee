package trace

import "testing"

// BenchmarkWrite is what a span costs the rank's writer goroutine.
func BenchmarkWrite(b *testing.B) {
	w, err := Create(b.TempDir(), RankInfo{Job: "bench", Rank: 0, Size: 2, Host: "h", PID: 1})
	if err != nil {
		b.Fatal(err)
	}
	s := Span{Name: "Allreduce", Cat: "coll", Comm: "world", Bytes: 8, Peer: None, Root: None,
		Alg: "allreduce/node-segment", By: "table", Site: "main.go:42 main.step"}
	for i := 0; b.Loop(); i++ {
		s.Start, s.End = int64(i)*1000, int64(i)*1000+400
		if err := w.Write(s); err != nil {
			b.Fatal(err)
		}
	}
	w.Close(int64(b.N)*1000, 0)
}
