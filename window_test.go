package commtune_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/commtune/commtune"
)

// TestNilWindow: every call on a nil window is an error, not a panic.
func TestNilWindow(t *testing.T) {
	ctx := context.Background()
	var w *commtune.Window[int64]
	calls := map[string]func() error{
		"Put":            func() error { return w.Put(ctx, []int64{1}, 0, 0) },
		"Get":            func() error { return w.Get(ctx, []int64{1}, 0, 0) },
		"Accumulate":     func() error { return w.Accumulate(ctx, []int64{1}, 0, 0, commtune.Sum) },
		"FetchAndOp":     func() error { _, err := w.FetchAndOp(ctx, 1, 0, 0, commtune.Sum); return err },
		"CompareAndSwap": func() error { _, err := w.CompareAndSwap(ctx, 1, 2, 0, 0); return err },
		"Rput":           func() error { _, err := w.Rput([]int64{1}, 0, 0); return err },
		"Fence":          func() error { return w.Fence(ctx) },
		"Lock":           func() error { return w.Lock(ctx, commtune.LockShared, 0) },
		"LockAll":        func() error { return w.LockAll(ctx) },
		"Flush":          func() error { return w.Flush(ctx, 0) },
		"Complete":       func() error { return w.Complete(ctx) },
		"Free":           func() error { return w.Free(ctx) },
	}
	for name, call := range calls {
		if err := call(); err == nil || !strings.Contains(err.Error(), "nil window") {
			t.Errorf("%s on a nil window: %v", name, err)
		}
	}
	if w.Local() != nil || w.Comm() != nil || w.Size(0) != 0 {
		t.Error("a nil window has memory, a communicator or a size")
	}
}

// TestWindowOps: Replace and NoOp are for accumulates only; a collective
// refuses them, and an accumulate refuses a user operation, by name.
func TestWindowOps(t *testing.T) {
	ctx := context.Background()
	err := commtune.Local(2, func(c *commtune.Comm) error {
		for _, op := range []commtune.Op{commtune.Replace, commtune.NoOp} {
			err := commtune.Allreduce(ctx, c, []int64{1}, make([]int64, 1), op)
			if err == nil || !strings.Contains(err.Error(), "one-sided") {
				return errors.New("Allreduce with " + op.Name() + ": no error naming one-sided accumulates")
			}
		}
		w, err := commtune.AllocWindow[float64](ctx, c, 4)
		if err != nil {
			return err
		}
		if err := w.LockAll(ctx); err != nil {
			return err
		}
		if err := w.Accumulate(ctx, []float64{1}, 0, 0, commtune.BXor); err == nil {
			return errors.New("bitwise accumulate of floats: no error")
		}
		if err := w.Accumulate(ctx, []float64{2}, 1-c.Rank(), 1, commtune.Replace); err != nil {
			return err
		}
		old, err := w.FetchAndOp(ctx, 5, 1-c.Rank(), 2, commtune.Max)
		if err != nil || old != 0 {
			return errors.New("FetchAndOp Max on a zero element")
		}
		if err := w.UnlockAll(ctx); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if l := w.Local(); l[1] != 2 || l[2] != 5 {
			return errors.New("Replace or Max did not land")
		}
		return w.Free(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
}
