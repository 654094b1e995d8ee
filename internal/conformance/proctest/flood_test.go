package proctest

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/testenv"
)

// Flood: rank 0 sends floodCount eager-sized messages to rank 1, which
// sleeps floodSleep before receiving any. All must arrive intact and in
// order, and rank 1's buffered unexpected memory must stay within the
// configured limit.
const (
	floodCount = 100000
	floodSize  = 1 << 10
	floodSleep = 2 * time.Second
	floodLimit = 4 << 20 // COMMTUNE_UNEXPECTED_LIMIT for the flood job
)

func flood(ctx context.Context, c *commtune.Comm) error {
	switch c.Rank() {
	case 0:
		b := make([]byte, floodSize)
		for i := 0; i < floodCount; i++ {
			conformance.FillPayload(b, 0, 1, i)
			if err := c.Send(ctx, b, 1, 0); err != nil {
				return fmt.Errorf("send %d: %w", i, err)
			}
		}
		s := c.Stats()
		fmt.Printf("rank 0: flood sent %d messages: %d eager, %d by rendezvous for lack of credit\n",
			floodCount, s.EagerCopySends+s.EagerIovecSends, s.CreditFallbacks)
	case 1:
		runtime.GC()
		base := heapObjects()
		var peakHeap, peakLive atomic.Uint64
		stop := make(chan struct{})
		done := make(chan struct{})
		go sampleHeap(&peakHeap, &peakLive, stop, done)
		time.Sleep(floodSleep)
		mid := c.Stats()
		b := make([]byte, floodSize)
		want := make([]byte, floodSize)
		for i := 0; i < floodCount; i++ {
			st, err := c.Recv(ctx, b, 0, 0)
			if err != nil {
				return fmt.Errorf("receive %d: %w", i, err)
			}
			conformance.FillPayload(want, 0, 1, i)
			if st.Count != floodSize || !bytes.Equal(b, want) {
				return fmt.Errorf("message %d: %d bytes, intact %v", i, st.Count, bytes.Equal(b, want))
			}
		}
		close(stop)
		<-done
		s := c.Stats()
		fmt.Printf("rank 1: flood received %d messages intact and in order; unexpected peak %d bytes (limit %d); "+
			"buffered after the sleep %d bytes; heap objects before %d bytes, peak %d bytes (with garbage not yet collected); "+
			"live heap after a collection peak %d bytes\n",
			floodCount, s.UnexpectedPeak, floodLimit, mid.UnexpectedBytes, base, peakHeap.Load(), peakLive.Load())
		if s.UnexpectedPeak > floodLimit {
			return fmt.Errorf("unexpected peak %d over the limit %d", s.UnexpectedPeak, floodLimit)
		}
	}
	return nil
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sampleHeap records every millisecond the peaks of heap objects
// (garbage included) and of the heap a collection found live.
func sampleHeap(peak, live *atomic.Uint64, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
		if v := s[1].Value.Uint64(); v > live.Load() {
			live.Store(v)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func TestFloodProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("flood moves 100 MB; skipped with -short")
	}
	testenv.SkipUnderRace(t, "a bound on the memory 100 MB of unexpected traffic between processes takes")
	for _, tr := range conformance.Transports {
		t.Run(tr.Name, func(t *testing.T) {
			out, err := conformance.RunJob(2, "flood", "", fmt.Sprintf("COMMTUNE_UNEXPECTED_LIMIT=%d", floodLimit), tr.Env)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Log(out)
		})
	}
}
