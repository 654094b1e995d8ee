package observe

import (
	"context"
	"testing"
)

type benchSubject struct{ cs *Counters }

func (s benchSubject) Counters() *Counters { return s.cs }
func (s benchSubject) Label() string       { return "world" }

// BenchmarkBeginEnd is what observing one call costs the caller in each
// mode (without the timeline's file: its writer works apart).
func BenchmarkBeginEnd(b *testing.B) {
	for _, bc := range []struct {
		name  string
		count bool
	}{{"off", false}, {"counters", true}} {
		b.Run(bc.name, func(b *testing.B) {
			r := NewRecorder(0, bc.count, false)
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
