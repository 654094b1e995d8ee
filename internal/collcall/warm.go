package collcall

import (
	"context"
	"time"

	"github.com/commtune/commtune"
)

// For makes calls, batch at a time, until rank 0 of c has spent at least
// d in them; rank 0 broadcasts whether to go on, so that every rank makes
// the same calls. Passes warm up with it: an idle Go process has its
// runtime's monitor wake every 20 µs for its first few milliseconds of
// work, which costs a spinning rank ~30 µs each time here.
func For(ctx context.Context, c *commtune.Comm, d time.Duration, batch int, call func() error) error {
	start := time.Now()
	more := []byte{1}
	for more[0] == 1 {
		for range batch {
			if err := call(); err != nil {
				return err
			}
		}
		if c.Rank() == 0 && time.Since(start) >= d {
			more[0] = 0
		}
		if err := commtune.Bcast(ctx, c, more, 0); err != nil {
			return err
		}
	}
	return nil
}
