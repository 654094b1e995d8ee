package comm

import (
	"context"
	"testing"
)

// TestAlignClock measures the skew of goroutine ranks, which read one
// clock: Cristian's method must find it within its own error bound (half
// the fastest round trip) of the truth, 0, and agree with rank 0 on the
// origin. Ranks on rank 0's node skip the measurement: 0 exactly.
func TestAlignClock(t *testing.T) {
	for _, measure := range []bool{false, true} {
		measureEveryClock = measure
		origins := make([]int64, 4)
		run(t, 4, func(c *Comm) error {
			skew, origin, bound, err := c.alignClock(context.Background())
			if err != nil {
				return err
			}
			origins[c.rank] = origin
			switch {
			case bound < 0 || skew > bound || skew < -bound:
				t.Errorf("measure %v, rank %d: skew %d ns, beyond its error bound %d ns of the truth, 0", measure, c.rank, skew, bound)
			case !measure && (skew != 0 || bound != 0):
				t.Errorf("rank %d on rank 0's node: skew %d ns, bound %d ns; want 0, 0", c.rank, skew, bound)
			case measure && c.rank > 0 && bound == 0:
				t.Errorf("rank %d: measured, yet a bound of 0", c.rank)
			}
			return nil
		})
		for r, o := range origins {
			if o != origins[0] {
				t.Errorf("measure %v: rank %d's origin %d, rank 0's %d", measure, r, o, origins[0])
			}
		}
	}
	measureEveryClock = false
}
