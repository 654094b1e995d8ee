package nodecoll

import (
	"sync"
	"testing"
	"time"
)

// BenchmarkAllreduce8 times an 8-byte Allreduce of two goroutine ranks
// on heap parts: the segment's own cost, with no library around it.
func BenchmarkAllreduce8(b *testing.B) {
	parts := HeapParts(2, DefaultLayout)
	var wg sync.WaitGroup
	gs := make([]*Group, 2)
	for r := range gs {
		g, err := New(parts, r, DefaultLayout, &Waiter{Spin: 200 * time.Microsecond, Nap: time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		gs[r] = g
	}
	n := b.N
	b.ResetTimer()
	for r := range gs {
		wg.Go(func() {
			in, out := make([]byte, 8), make([]byte, 8)
			for range n {
				if err := gs[r].Allreduce(Sig{3}, in, out, sumU64); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
