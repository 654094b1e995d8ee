package observe

import (
	"context"
	"testing"

	"github.com/commtune/commtune/internal/trace"
)

type benchSubject struct{ cs *Counters }

func (s benchSubject) Counters() *Counters { return s.cs }
func (s benchSubject) Label() string       { return "world" }

// BenchmarkBeginEnd is what observing one call costs the caller in each
// mode (the timeline's spans held in memory, encoded when it stops).
func BenchmarkBeginEnd(b *testing.B) {
	for _, bc := range []struct {
		name         string
		count, trace bool
	}{{"off", false, false}, {"counters", true, false}, {"trace", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			r := NewRecorder(0, bc.count, false)
			if bc.trace {
				if err := r.StartTrace(b.TempDir(), trace.RankInfo{Job: "b", Size: 1, Host: "h", PID: 1}, 0); err != nil {
					b.Fatal(err)
				}
				defer r.StopTrace()
			}
			s := benchSubject{NewCounters(4)}
			ctx := context.Background()
			for b.Loop() {
				t := r.Begin(testOpA, s)
				r.End(ctx, t, s, &Call{Op: testOpA, Bytes: 8, Peer: NoRank, WorldPeer: NoRank, WorldRoot: NoRank, Alg: "a/seg", By: "table"})
			}
		})
	}
}

func BenchmarkActive(b *testing.B) {
	r := NewRecorder(0, false, false)
	n := 0
	for b.Loop() {
		if r.Active() {
			n++
		}
	}
	_ = n
}
