package bench

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/collcall"
	"github.com/commtune/commtune/internal/stats"
)

// lotteryFirst is CollLottery's back-to-back timing at one size, what a
// program pays: calls calls as the ranks' selection makes them (the
// lottery, or learn) from its cold start, back to back, each timed from
// the end of the one before — exploration, switches and all — against
// calls of each of cands forced (forcedCalls each if set, else calls);
// table names the fixed table's choice among them. A call's time is the
// slowest rank's; a series' wall time per call is its elapsed time over
// its calls on each rank, the slowest rank's. Rank 0 returns the run.
//
// The two means differ where ranks take turns being slow: a pipelined
// Bcast's root runs ahead, then waits, and its slow calls are not its
// receivers' (64 KiB in 16 KiB segments on 2 ranks: 16 µs a call by the
// slowest rank per call, 11.1 µs of wall time per call on every rank). The
// wall time is what a program making the calls back to back pays, and
// what the selection learns from (each rank's mean call, the slowest
// rank's).
//
// The series take turns in backToBackBlocks blocks, the order rotating,
// as collBackToBack's do: this machine drifts over seconds, and a
// selection run first, alone, met another machine than the forced
// series after it (a 64 KiB Bcast's best took 6.4 µs forced and 12 in the
// selection's stretch). Each forced series is warmed up and each of its
// blocks begins with blockWarmup untimed calls; the selection's calls are
// all timed, from its first, but the job is warmed up before them with
// the table's choice forced (barriers for WarmupTime, then that choice
// for as long), so that the buffers' first touch and the connections are
// nobody's: the selection starts knowing nothing, not on a cold machine.
func lotteryFirst(ctx context.Context, c *commtune.Comm, calls, forcedCalls, size int, call func(context.Context, *commtune.Comm, []commtune.CollOption) error,
	cands []string, table string, fence, gatherMax commtune.CollOption) (LotteryRun, error) {
	if err := collcall.For(ctx, c, WarmupTime, WarmupCalls, func() error { return c.Barrier(ctx, fence) }); err != nil {
		return LotteryRun{}, err
	}
	forced := make([][]commtune.CollOption, len(cands))
	for i, a := range cands {
		forced[i] = []commtune.CollOption{commtune.WithAlgorithm(a)}
	}
	forcedCall := func(i int) error { // series i: 0 the selection, i > 0 cands[i-1]
		if err := call(ctx, c, forced[i-1]); err != nil {
			return fmt.Errorf("%s at %d bytes: %w", cands[i-1], size, err)
		}
		return nil
	}
	tableOpt := []commtune.CollOption{commtune.WithAlgorithm(table)}
	if err := warmUp(ctx, c, func() error { return call(ctx, c, tableOpt) }); err != nil {
		return LotteryRun{}, fmt.Errorf("%s at %d bytes: %w", table, size, err)
	}
	for i := 1; i <= len(cands); i++ {
		if err := warmUp(ctx, c, func() error { return forcedCall(i) }); err != nil {
			return LotteryRun{}, err
		}
	}
	var choice commtune.CollChoice
	drawn := []commtune.CollOption{commtune.WithChoice(&choice)}
	lottery := make([]time.Duration, 0, calls)
	algos, leaders := make([]string, 0, calls), make([]string, 0, calls)
	starts := make([]int64, 0, calls)
	fcalls := cmp.Or(forcedCalls, calls)
	times := make([][]time.Duration, len(cands)+1)
	series := len(cands) + 1
	for b := range backToBackBlocks {
		for k := range series {
			i := (k + b) % series
			n := calls/backToBackBlocks + btoi(b < calls%backToBackBlocks)
			if i > 0 {
				n = fcalls/backToBackBlocks + btoi(b < fcalls%backToBackBlocks)
				for range blockWarmup {
					if err := forcedCall(i); err != nil {
						return LotteryRun{}, err
					}
				}
			}
			if err := c.Barrier(ctx, fence); err != nil {
				return LotteryRun{}, err
			}
			prev := time.Now()
			for range n {
				if i > 0 {
					if err := forcedCall(i); err != nil {
						return LotteryRun{}, err
					}
					now := time.Now()
					times[i], prev = append(times[i], now.Sub(prev)), now
					continue
				}
				starts = append(starts, prev.UnixMicro())
				if err := call(ctx, c, drawn); err != nil {
					return LotteryRun{}, fmt.Errorf("the selection at %d bytes: %w", size, err)
				}
				now := time.Now()
				lottery, prev = append(lottery, now.Sub(prev)), now
				algos, leaders = append(algos, choice.Algorithm), append(leaders, choice.Leader)
			}
		}
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
	// Each series' elapsed time per call on each rank, the slowest rank's.
	wall := make([]float64, series)
	times[0] = lottery
	for i, ts := range times {
		var sum time.Duration
		for _, d := range ts {
			sum += d
		}
		wall[i] = float64(sum.Nanoseconds()) / float64(max(len(ts), 1))
	}
	if err := commtune.Reduce(ctx, c, wall, wall, commtune.Max, 0, gatherMax); err != nil {
		return LotteryRun{}, err
	}
	run := LotteryRun{Bytes: size, MeanUS: stats.Mean(l) / 1e3, MedianUS: stats.Median(l) / 1e3, WallUS: wall[0] / 1e3}
	for j, t := range l {
		run.Calls = append(run.Calls, LotteryCall{At: starts[j], TimeUS: t / 1e3, Algo: algos[j], Leader: leaders[j]})
	}
	run.Settled, run.Leader = settled(leaders)
	for i, a := range cands {
		f, err := slowest(times[i+1])
		if err != nil {
			return LotteryRun{}, err
		}
		run.Fixed = append(run.Fixed, FixedResult{Algo: a, MeanUS: stats.Mean(f) / 1e3, MedianUS: stats.Median(f) / 1e3, WallUS: wall[i+1] / 1e3, Table: a == table})
	}
	return run, nil
}
