package futex

import (
	"sync/atomic"
	"testing"
	"time"
)

// Each case sleeps once on a word and must be back before its bound:
// at once when the word differs, on a wake-up, or at the end of d. The
// bounds are far above what each should take, so a busy machine does
// not fail them; a sleep that ignored its word, its wake-up or its time
// would still.
func TestSleep(t *testing.T) {
	cases := []struct {
		name  string
		word  uint32        // the word's value; Sleep is called with val 0
		d     time.Duration // Sleep's limit
		wake  bool          // another goroutine sets the word and wakes
		bound time.Duration
	}{
		{"word differs", 1, time.Hour, false, 10 * time.Second},
		{"woken", 0, time.Hour, true, 10 * time.Second},
		{"times out", 0, 20 * time.Millisecond, false, 10 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var w atomic.Uint32
			w.Store(tc.word)
			if tc.wake {
				go func() {
					time.Sleep(10 * time.Millisecond)
					w.Store(1)
					WakeAll(&w)
				}()
			}
			start := time.Now()
			for {
				Sleep(&w, 0, tc.d)
				// Early returns are allowed: a woken sleeper looks again.
				if !tc.wake || w.Load() != 0 || time.Since(start) > tc.bound {
					break
				}
			}
			if took := time.Since(start); took > tc.bound {
				t.Errorf("back after %v, want within %v", took, tc.bound)
			}
		})
	}
}
