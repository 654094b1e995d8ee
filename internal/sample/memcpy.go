package sample

import (
	"time"

	"github.com/commtune/commtune/internal/profile"
)

// Memcpy times a plain copy() of each planned size between two buffers
// already in cache: the reference every transfer method is set against
// (seed 000 §II-B: the eager protocol's overhead is a memory copy).
func Memcpy(plan Plan) profile.Curve {
	src := make([]byte, MaxSize)
	dst := make([]byte, MaxSize)
	for i := range src {
		src[i] = byte(i)
	}
	var c profile.Curve
	var d []time.Duration
	for _, size := range plan.Sizes {
		reps := plan.Reps(size) * plan.Blocks
		d = d[:0]
		copy(dst[:size], src[:size]) // warm
		// Time batches of copies: one small copy is below the clock's
		// resolution.
		batch := max(1, int(4096/size))
		for i := 0; i < reps; i++ {
			t0 := time.Now()
			for j := 0; j < batch; j++ {
				copy(dst[:size], src[:size])
			}
			d = append(d, time.Since(t0)/time.Duration(batch))
		}
		c = append(c, point(size, [][]time.Duration{d}))
	}
	return c
}
