package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/commtune/commtune"
)

// One-sided patterns after the OSU micro-benchmarks' (osu_put_latency,
// osu_get_latency, osu_put_bw, osu_get_bw, osu_fop_latency): rank 0 is the
// origin, rank 1 the target, which takes no part but waits in a barrier
// (passive target). Each iteration is timed back to back on rank 0, from
// the end of the one before to its own, after untimed ones for WarmupTime.
// mpiref's reference benchmark does the same with MPI's windows.
const (
	RMAPutLatency = "put-lat"     // Put of size bytes, Flush; under one shared Lock
	RMAGetLatency = "get-lat"     // Get of size bytes, Flush; under one shared Lock
	RMAPutBW      = "put-bw"      // RMABurst Puts of size bytes, Flush; under one shared Lock
	RMAGetBW      = "get-bw"      // RMABurst Gets of size bytes, Flush; under one shared Lock
	RMAFopLock    = "fop-lock"    // Lock exclusive, FetchAndOp of an int64 (sum), Unlock
	RMAFopLockAll = "fop-lockall" // FetchAndOp of an int64 (sum), Flush; under one LockAll
)

// RMAPatterns are the patterns RMA measures.
var RMAPatterns = []string{RMAPutLatency, RMAGetLatency, RMAPutBW, RMAGetBW, RMAFopLock, RMAFopLockAll}

// RMABurst is how many operations a bandwidth iteration issues before its
// Flush (OSU's window size).
const RMABurst = 64

// RMAConfig says what RMA measures.
type RMAConfig struct {
	Pattern string
	Sizes   []int  // bytes per operation (the fop patterns take 8 whatever the size)
	Iters   int    // iterations at small sizes (Iterations)
	Window  string // "alloc" (AllocWindow, MPI_Win_allocate) or "new" (NewWindow, MPI_Win_create)
}

// RMAReport is the JSON document `commtune bench rma --json` prints; each
// result's times are per iteration (for the bandwidth patterns, per
// RMABurst operations and their Flush).
type RMAReport struct {
	Bench     string       `json:"bench"`
	Pattern   string       `json:"pattern"`
	Window    string       `json:"window"`
	Transport string       `json:"transport"`
	Results   []CollResult `json:"results"`
}

// CheckRMAConfig reports what is wrong with cfg.
func CheckRMAConfig(cfg RMAConfig) error {
	if !slices.Contains(RMAPatterns, cfg.Pattern) {
		return fmt.Errorf("pattern %q: want one of %v", cfg.Pattern, RMAPatterns)
	}
	if cfg.Window != "alloc" && cfg.Window != "new" {
		return fmt.Errorf("window %q: want alloc or new", cfg.Window)
	}
	if len(cfg.Sizes) == 0 || cfg.Iters < 1 {
		return fmt.Errorf("want sizes and a positive iteration count")
	}
	return nil
}

// rmaOps is how many operations an iteration of pattern issues.
func rmaOps(pattern string) int {
	if pattern == RMAPutBW || pattern == RMAGetBW {
		return RMABurst
	}
	return 1
}

// RMA runs cfg's pattern on ranks 0 and 1 of c (others wait) and returns,
// on rank 0, a result per size.
func RMA(ctx context.Context, c *commtune.Comm, cfg RMAConfig) ([]CollResult, error) {
	if err := CheckRMAConfig(cfg); err != nil {
		return nil, err
	}
	if c.Size() < 2 {
		return nil, fmt.Errorf("rma needs 2 ranks, have %d", c.Size())
	}
	fop := cfg.Pattern == RMAFopLock || cfg.Pattern == RMAFopLockAll
	maxSize := max(slices.Max(cfg.Sizes), 8)
	if fop {
		w, err := rmaWindow[int64](ctx, c, cfg.Window, 1)
		if err != nil {
			return nil, err
		}
		return rmaSizes(ctx, c, cfg, w, func(int) func() error {
			return fopIteration(ctx, w, cfg.Pattern)
		})
	}
	w, err := rmaWindow[byte](ctx, c, cfg.Window, maxSize)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, maxSize)
	for i := range buf {
		buf[i] = byte(i)
	}
	return rmaSizes(ctx, c, cfg, w, func(size int) func() error {
		b := buf[:size]
		op := func() error { return w.Put(ctx, b, 1, 0) }
		if cfg.Pattern == RMAGetLatency || cfg.Pattern == RMAGetBW {
			op = func() error { return w.Get(ctx, b, 1, 0) }
		}
		ops := rmaOps(cfg.Pattern)
		return func() error {
			for range ops {
				if err := op(); err != nil {
					return err
				}
			}
			return w.Flush(ctx, 1)
		}
	})
}

func rmaWindow[T commtune.Number](ctx context.Context, c *commtune.Comm, kind string, n int) (*commtune.Window[T], error) {
	if kind == "new" {
		return commtune.NewWindow(ctx, c, make([]T, n))
	}
	return commtune.AllocWindow[T](ctx, c, n)
}

func fopIteration(ctx context.Context, w *commtune.Window[int64], pattern string) func() error {
	if pattern == RMAFopLockAll {
		return func() error {
			if _, err := w.FetchAndOp(ctx, 1, 1, 0, commtune.Sum); err != nil {
				return err
			}
			return w.Flush(ctx, 1)
		}
	}
	return func() error {
		if err := w.Lock(ctx, commtune.LockExclusive, 1); err != nil {
			return err
		}
		if _, err := w.FetchAndOp(ctx, 1, 1, 0, commtune.Sum); err != nil {
			return err
		}
		return w.Unlock(ctx, 1)
	}
}

// rmaSizes times iteration(size) per size on rank 0, inside the pattern's
// epoch, while the other ranks wait in a barrier; then frees w.
func rmaSizes[T commtune.Number](ctx context.Context, c *commtune.Comm, cfg RMAConfig, w *commtune.Window[T], iteration func(size int) func() error) ([]CollResult, error) {
	var out []CollResult
	for _, size := range cfg.Sizes {
		if c.Rank() == 0 {
			it := iteration(size)
			times, err := rmaTimes(ctx, w, cfg.Pattern, Iterations(size*rmaOps(cfg.Pattern), cfg.Iters), it)
			if err != nil {
				return nil, err
			}
			out = append(out, collResult(cfg.Pattern, size, SummaryOf(times)))
		}
		if err := c.Barrier(ctx); err != nil {
			return nil, err
		}
	}
	return out, w.Free(ctx)
}

// rmaTimes opens the pattern's epoch to rank 1, runs untimed iterations for
// WarmupTime, then n timed ones back to back, and closes the epoch.
func rmaTimes[T commtune.Number](ctx context.Context, w *commtune.Window[T], pattern string, n int, it func() error) ([]float64, error) {
	switch pattern {
	case RMAFopLock:
	case RMAFopLockAll:
		if err := w.LockAll(ctx); err != nil {
			return nil, err
		}
		defer w.UnlockAll(ctx)
	default:
		if err := w.Lock(ctx, commtune.LockShared, 1); err != nil {
			return nil, err
		}
		defer w.Unlock(ctx, 1)
	}
	for start := time.Now(); time.Since(start) < WarmupTime; {
		if err := it(); err != nil {
			return nil, err
		}
	}
	ns := make([]float64, n)
	prev := time.Now()
	for i := range ns {
		if err := it(); err != nil {
			return nil, err
		}
		now := time.Now()
		ns[i] = float64(now.Sub(prev).Nanoseconds())
		prev = now
	}
	return ns, nil
}
