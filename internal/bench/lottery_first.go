package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/collcall"
	"github.com/commtune/commtune/internal/stats"
)

// lotteryFirst is CollLottery's back-to-back timing at one size, what a
// program pays: after the processes wake (barriers for WarmupTime), calls
// calls through the lottery from its cold start, back to back, each timed
// from the end of the one before — exploration, switches and all — then
// calls of each candidate forced, back to back in turns of blocks
// (collBackToBack). A call's time is the slowest rank's. Rank 0 returns
// the run.
func lotteryFirst(ctx context.Context, c *commtune.Comm, calls, size int, call func(context.Context, *commtune.Comm, []commtune.CollOption) error,
	cands []coll.Algorithm, fence, gatherMax commtune.CollOption) (LotteryRun, error) {
	if err := collcall.For(ctx, c, WarmupTime, WarmupCalls, func() error { return c.Barrier(ctx, fence) }); err != nil {
		return LotteryRun{}, err
	}
	var choice commtune.CollChoice
	drawn := []commtune.CollOption{commtune.WithChoice(&choice)}
	lottery := make([]time.Duration, calls)
	algos, leaders := make([]string, calls), make([]string, calls)
	starts := make([]int64, calls)
	prev := time.Now()
	for i := range lottery {
		starts[i] = prev.UnixMicro()
		if err := call(ctx, c, drawn); err != nil {
			return LotteryRun{}, fmt.Errorf("%s at %d bytes: %w", Lottery, size, err)
		}
		now := time.Now()
		lottery[i], prev = now.Sub(prev), now
		algos[i], leaders[i] = choice.Algorithm, choice.Leader
	}
	forced := make([][]commtune.CollOption, len(cands))
	for i, a := range cands {
		forced[i] = []commtune.CollOption{commtune.WithAlgorithm(a.Name())}
	}
	times, err := collBackToBack(ctx, c, len(cands), 0, calls, func(i int) error {
		if err := call(ctx, c, forced[i]); err != nil {
			return fmt.Errorf("%s at %d bytes: %w", cands[i].Name(), size, err)
		}
		return nil
	})
	if err != nil {
		return LotteryRun{}, err
	}
	slowest := func(ts []time.Duration) ([]float64, error) {
		ns := make([]float64, len(ts))
		for i, d := range ts {
			ns[i] = float64(d.Nanoseconds())
		}
		out := make([]float64, len(ns))
		err := commtune.Reduce(ctx, c, ns, out, commtune.Max, 0, gatherMax)
		return out, err
	}
	l, err := slowest(lottery)
	if err != nil {
		return LotteryRun{}, err
	}
	run := LotteryRun{Bytes: size, MeanUS: stats.Mean(l) / 1e3, MedianUS: stats.Median(l) / 1e3}
	for j, t := range l {
		run.Calls = append(run.Calls, LotteryCall{At: starts[j], TimeUS: t / 1e3, Algo: algos[j], Leader: leaders[j]})
	}
	run.Settled, run.Leader = settled(leaders)
	for i, a := range cands {
		f, err := slowest(times[i])
		if err != nil {
			return LotteryRun{}, err
		}
		run.Fixed = append(run.Fixed, FixedResult{Algo: a.Name(), MeanUS: stats.Mean(f) / 1e3, MedianUS: stats.Median(f) / 1e3, Table: i == 0})
	}
	return run, nil
}
