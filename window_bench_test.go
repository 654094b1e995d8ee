package commtune_test

import (
	"context"
	"testing"

	"github.com/commtune/commtune"
)

// benchWindow runs op b.N times on rank 0 against rank 1 of a two-rank
// window of goroutine ranks (in place), inside epoch.
func benchWindow(b *testing.B, epoch string, op func(ctx context.Context, w *commtune.Window[int64]) error) {
	ctx := context.Background()
	err := commtune.Local(2, func(c *commtune.Comm) error {
		w, err := commtune.AllocWindow[int64](ctx, c, 8)
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			if epoch == "lockall" {
				if err := w.LockAll(ctx); err != nil {
					return err
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := op(ctx, w); err != nil {
					return err
				}
			}
			b.StopTimer()
			if epoch == "lockall" {
				if err := w.UnlockAll(ctx); err != nil {
					return err
				}
			}
		}
		return w.Free(ctx)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWindowPutFlush: Put of one int64 and Flush, in place.
func BenchmarkWindowPutFlush(b *testing.B) {
	v := []int64{1}
	benchWindow(b, "lockall", func(ctx context.Context, w *commtune.Window[int64]) error {
		if err := w.Put(ctx, v, 1, 0); err != nil {
			return err
		}
		return w.Flush(ctx, 1)
	})
}

// BenchmarkWindowFetchAndOp: FetchAndOp (sum) and Flush under LockAll.
func BenchmarkWindowFetchAndOp(b *testing.B) {
	benchWindow(b, "lockall", func(ctx context.Context, w *commtune.Window[int64]) error {
		if _, err := w.FetchAndOp(ctx, 1, 1, 0, commtune.Sum); err != nil {
			return err
		}
		return w.Flush(ctx, 1)
	})
}

// BenchmarkWindowLockedFetchAndOp: exclusive Lock, FetchAndOp, Unlock.
func BenchmarkWindowLockedFetchAndOp(b *testing.B) {
	benchWindow(b, "", func(ctx context.Context, w *commtune.Window[int64]) error {
		if err := w.Lock(ctx, commtune.LockExclusive, 1); err != nil {
			return err
		}
		if _, err := w.FetchAndOp(ctx, 1, 1, 0, commtune.Sum); err != nil {
			return err
		}
		return w.Unlock(ctx, 1)
	})
}
