package observe

import (
	"testing"
	"time"
)

// TestTickClock: readings of the timeline's clock, turned into Now's
// nanoseconds, fall between readings of Now taken around them, and
// durations on it convert to Now's within a percent, whether the machine
// lets it use the processor's counter or not.
func TestTickClock(t *testing.T) {
	c := newTickClock()
	t.Logf("counter: %v, %.4f ns per tick", c.counter, c.perTick)
	const slack = 20_000 // ns: the calibration's error over the test's few milliseconds, with room
	for i := range 5 {
		n0 := Now()
		tk := c.now()
		n1 := Now()
		time.Sleep(time.Duration(i) * time.Millisecond)
		n2 := Now()
		tk2 := c.now()
		n3 := Now()
		at := c.scale()
		if got := at(tk); got < n0-slack || got > n1+slack {
			t.Fatalf("reading %d: %d ns on Now's scale, want within [%d, %d] ± %d", i, got, n0, n1, slack)
		}
		d, want := c.nanos(tk2-tk), n2-n1
		if d < want-want/100-slack || d > n3-n0+want/100+slack {
			t.Fatalf("duration %d: %d ns, want about %d", i, d, want)
		}
	}
}
