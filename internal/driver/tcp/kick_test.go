package tcp

import (
	"testing"
	"time"
)

// TestKicksNeverBlock: frames Flush writes leave their kicks in jobs, and
// a Post that blocked on a full jobs while holding wmu hung the rail for
// good (the writer needs wmu to end its frame). Neither a kick nor the
// final job may wait for the writer while wmu is held.
func TestKicksNeverBlock(t *testing.T) {
	for _, final := range []job{jobBye, jobShut} {
		r := &rail{jobs: make(chan job, 2)}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 5 { // more kicks than jobs holds, none taken
				r.wmu.Lock()
				r.kickLocked()
				r.wmu.Unlock()
			}
			r.finish(final)
		}()
		// The writer, ending its frame, needs wmu while jobs is full.
		deadline := time.After(5 * time.Second)
		for got := false; !got; {
			select {
			case <-deadline:
				t.Fatal("wmu held while waiting for the writer")
			default:
			}
			if r.wmu.TryLock() {
				got = len(r.jobs) == cap(r.jobs)
				r.wmu.Unlock()
			}
			time.Sleep(time.Millisecond)
		}
		var last job
		for j := range r.jobs {
			last = j
		}
		<-done
		if last != final {
			t.Fatalf("last job %d, want %d", last, final)
		}
	}
}
