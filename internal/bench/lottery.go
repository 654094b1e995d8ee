package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/collcall"
	"github.com/commtune/commtune/internal/stats"
	"github.com/commtune/commtune/internal/units"
)

// Lottery is the algorithm name that runs calls through the lottery
// scheduler: `commtune bench coll --algo lottery`.
const Lottery = "lottery"

// Learn is the algorithm name that runs calls as a program's do with no
// setting (COMMTUNE_COLL_SELECT=learn), from a cold start, against every
// algorithm of the operation forced: `commtune bench coll --algo learn`.
const Learn = "learn"

// LotteryCall is one call through the lottery, as rank 0 saw it.
type LotteryCall struct {
	At     int64   `json:"at_unix_us"`       // when rank 0 started it: to line calls up with outside events
	TimeUS float64 `json:"us"`               // the slowest rank's time
	Algo   string  `json:"algo"`             // the algorithm drawn
	Leader string  `json:"leader,omitempty"` // the best-known candidate after the call
}

// FixedResult is one candidate's time when every call runs it.
type FixedResult struct {
	Algo     string  `json:"algo"`
	MeanUS   float64 `json:"mean_us"`
	MedianUS float64 `json:"median_us"`
	// WallUS is the series' elapsed time per call, the slowest rank's
	// (back-to-back timing only).
	WallUS float64 `json:"wall_us,omitempty"`
	Table  bool    `json:"table,omitempty"` // the fixed decision table's choice
	// Blocks are the series' blocks of consecutive calls in the order run,
	// to compare the candidates before and after conditions change.
	Blocks []FixedBlock `json:"blocks"`
}

// FixedBlock is one block of a candidate's calls: when rank 0 started it,
// and the mean of its calls' slowest-rank times.
type FixedBlock struct {
	At     int64   `json:"at_unix_us"`
	MeanUS float64 `json:"mean_us"`
}

// LotteryRun is the lottery at one size, against each candidate run alone.
type LotteryRun struct {
	Bytes    int     `json:"bytes"`
	MeanUS   float64 `json:"mean_us"` // over all calls, exploration included
	MedianUS float64 `json:"median_us"`
	// WallUS is the selection's elapsed time per call, the slowest rank's
	// (back-to-back timing only): what a program pays.
	WallUS float64       `json:"wall_us,omitempty"`
	Calls  []LotteryCall `json:"calls"`
	Fixed  []FixedResult `json:"fixed"`
	// Settled is the call (from 1) from which the leader never changed
	// again; Leader is that last leader.
	Settled int    `json:"settled"`
	Leader  string `json:"leader"`
}

// LotteryReport is the JSON document of `commtune bench coll --algo
// lottery --json`.
type LotteryReport struct {
	Bench     string       `json:"bench"`            // "coll-lottery", or "coll-learn" for --algo learn
	Select    string       `json:"select,omitempty"` // the selection measured: lottery (empty) or learn
	Op        string       `json:"op"`
	Ranks     int          `json:"ranks"`
	Transport string       `json:"transport"`
	Runs      []LotteryRun `json:"runs"`
}

// LotteryConfig says what to measure.
type LotteryConfig struct {
	Op    coll.Operation
	Sizes []int
	Calls int // calls through the lottery, and of each candidate alone
	// Timing: BackToBack runs the lottery's calls first, from a cold
	// start, back to back, then each candidate's (lotteryFirst); anything
	// else interleaves them in blocks, a barrier before each call.
	Timing Timing
	// Table is the sampled decision table the ranks' lottery draws from,
	// where it has the call (coll.Table.Rivals); nil: the fixed list.
	Table *coll.Table
	// Forced, if set, are the algorithms run forced against the
	// selection, instead of the lottery's candidates (back-to-back timing
	// only): with Applies, which says whether one runs at a size on the
	// ranks, the operation's every algorithm.
	Forced  []string
	Applies func(algo string, ranks, size int) bool
	// ForcedCalls, if positive, is how many calls each forced algorithm
	// makes (back-to-back timing only; default Calls): a mean over a
	// thousand back-to-back calls says what one costs, and the slow ones
	// at 1 MiB would take minutes at the selection's count.
	ForcedCalls int
	// Progress, if set, is called on rank 0 after each block of calls.
	Progress func(done, total int, what string)
}

// The calls are made in interleaved blocks of lotteryBlock calls: the
// lottery's block, then each candidate's, in turn. On a loaded machine
// slow spells last a few hundred calls; blocks much shorter than that
// make the spells hit every series alike, where ten long blocks left each
// series' mean at the mercy of which spells it happened to meet (block
// means of one series differed by up to 3x). Before the first block each
// candidate runs warmupCalls calls, so that buffers, pools and
// connections are warm for all series, the lottery's included.
const (
	lotteryBlock = 20
	warmupCalls  = 10
)

// CollLottery runs cfg.Calls calls of cfg.Op at each size through the
// lottery scheduler, which c's ranks must have on (COMMTUNE_COLL_SELECT=
// lottery), and as many of each candidate the lottery draws among, forced,
// in interleaved blocks. Every call is timed as in Coll: a barrier, then
// the call, the slowest rank's time. Rank 0 returns the runs.
func CollLottery(ctx context.Context, c *commtune.Comm, cfg LotteryConfig) ([]LotteryRun, error) {
	n := c.Size()
	if cfg.Calls < 1 {
		return nil, fmt.Errorf("bench: %d lottery calls: want at least 1", cfg.Calls)
	}
	// The barriers and reductions that time the calls are forced, so that
	// they neither draw nor record.
	fence := commtune.WithAlgorithm(coll.Decide(coll.OpBarrier, n, 0, false).Name())
	gatherMax := commtune.WithAlgorithm(coll.Decide(coll.OpReduce, n, 8*cfg.Calls, true).Name())
	var out []LotteryRun
	for si, size := range cfg.Sizes {
		if cfg.Op.Reduces() {
			size = collcall.Size(cfg.Op, n, size)
		}
		call, err := collcall.New(cfg.Op, n, c.Rank(), size)
		if err != nil {
			return nil, err
		}
		cands := coll.Candidates(cfg.Op, n, size, true)
		if len(cfg.Table.Points(cfg.Op, n)) > 0 {
			cands = cfg.Table.Rivals(cfg.Op, n, size, true)
		}
		if len(cands) == 0 {
			return nil, fmt.Errorf("bench: %s at %d bytes on %d ranks has no algorithm to choose from", cfg.Op, size, n)
		} // one: the sampled table found a clear winner, which the lottery runs without drawing
		if cfg.Timing == BackToBack {
			names, table := make([]string, 0, len(cands)), cands[0].Name()
			for _, a := range cands {
				names = append(names, a.Name())
			}
			if cfg.Forced != nil {
				names, table = names[:0], coll.Decide(cfg.Op, n, size, true).Name()
				for _, name := range cfg.Forced {
					if cfg.Applies == nil || cfg.Applies(name, n, size) {
						names = append(names, name)
					}
				}
			}
			run, err := lotteryFirst(ctx, c, cfg.Calls, cfg.ForcedCalls, size, call, names, table, fence, gatherMax)
			if err != nil {
				return nil, err
			}
			if c.Rank() == 0 {
				out = append(out, run)
			}
			if cfg.Progress != nil && c.Rank() == 0 {
				cfg.Progress((si+1)*LotteryBlocks(cfg.Calls), len(cfg.Sizes)*LotteryBlocks(cfg.Calls), units.FormatSize(int64(size))+" bytes")
			}
			continue
		}
		// Series 0 is the lottery's; series i > 0 is candidate i-1 forced.
		opts := make([][]commtune.CollOption, len(cands)+1)
		var choice commtune.CollChoice
		opts[0] = []commtune.CollOption{commtune.WithChoice(&choice)}
		for i, a := range cands {
			opts[i+1] = []commtune.CollOption{commtune.WithAlgorithm(a.Name())}
		}
		for i := 1; i < len(opts); i++ {
			for range warmupCalls {
				if err := call(ctx, c, opts[i]); err != nil {
					return nil, fmt.Errorf("%s at %d bytes: %w", cands[i-1].Name(), size, err)
				}
			}
		}
		times := make([][]float64, len(opts))
		var drawn, leaders []string
		var starts []int64
		blockStarts := make([][]int64, len(opts))
		blocks := LotteryBlocks(cfg.Calls)
		for b := 0; b < blocks; b++ {
			for k := range opts {
				i := (k + b) % len(opts)
				for it := 0; it < lotteryBlock && len(times[i]) < cfg.Calls; it++ {
					if err := c.Barrier(ctx, fence); err != nil {
						return nil, err
					}
					start := time.Now()
					if it == 0 {
						blockStarts[i] = append(blockStarts[i], start.UnixMicro())
					}
					if err := call(ctx, c, opts[i]); err != nil {
						return nil, fmt.Errorf("%s at %d bytes: %w", seriesName(i, cands), size, err)
					}
					times[i] = append(times[i], float64(time.Since(start).Nanoseconds()))
					if i == 0 {
						drawn, leaders = append(drawn, choice.Algorithm), append(leaders, choice.Leader)
						starts = append(starts, start.UnixMicro())
					}
				}
			}
			if cfg.Progress != nil && c.Rank() == 0 {
				cfg.Progress(si*blocks+b+1, len(cfg.Sizes)*blocks, units.FormatSize(int64(size))+" bytes")
			}
		}
		slowest := make([][]float64, len(opts))
		for i, t := range times {
			slowest[i] = make([]float64, len(t))
			if err := commtune.Reduce(ctx, c, t, slowest[i], commtune.Max, 0, gatherMax); err != nil {
				return nil, err
			}
		}
		if c.Rank() != 0 {
			continue
		}
		run := LotteryRun{Bytes: size, MeanUS: stats.Mean(slowest[0]) / 1e3, MedianUS: stats.Median(slowest[0]) / 1e3}
		for j, t := range slowest[0] {
			run.Calls = append(run.Calls, LotteryCall{At: starts[j], TimeUS: t / 1e3, Algo: drawn[j], Leader: leaders[j]})
		}
		run.Settled, run.Leader = settled(leaders)
		for i, a := range cands {
			f := FixedResult{Algo: a.Name(), MeanUS: stats.Mean(slowest[i+1]) / 1e3, MedianUS: stats.Median(slowest[i+1]) / 1e3, Table: i == 0}
			for b, at := range blockStarts[i+1] {
				t := slowest[i+1][b*lotteryBlock : min((b+1)*lotteryBlock, len(slowest[i+1]))]
				f.Blocks = append(f.Blocks, FixedBlock{At: at, MeanUS: stats.Mean(t) / 1e3})
			}
			run.Fixed = append(run.Fixed, f)
		}
		out = append(out, run)
	}
	return out, nil
}

// LotteryBlocks is the number of blocks CollLottery runs per size for
// calls calls: the steps its Progress counts.
func LotteryBlocks(calls int) int { return (calls + lotteryBlock - 1) / lotteryBlock }

func seriesName(i int, cands []coll.Algorithm) string {
	if i == 0 {
		return Lottery
	}
	return cands[i-1].Name()
}

// settled returns the call (from 1) from which the leader stayed the
// last one, and that leader.
func settled(leaders []string) (int, string) {
	if len(leaders) == 0 {
		return 0, ""
	}
	last := leaders[len(leaders)-1]
	i := len(leaders)
	for i > 0 && leaders[i-1] == last {
		i--
	}
	return i + 1, last
}

// convergenceWindows is how many windows WriteLotteryTable's convergence
// splits the calls into.
const convergenceWindows = 20

// WriteLotteryTable prints, per size, the lottery's mean and median
// against each candidate's alone, the ratios to the best candidate and to
// the table's choice, where the choice settled, and the convergence: per
// window of calls, the mean time, the algorithm drawn most and the share
// of calls it took, and the leader at the window's end.
func WriteLotteryTable(w io.Writer, r *LotteryReport) error {
	sel := cmp.Or(r.Select, Lottery)
	for _, run := range r.Runs {
		fmt.Fprintf(w, "# commtune bench coll --algo %s: %s %s, %d ranks, transport %s, %d calls each; time (us) = slowest rank per call; wall = elapsed per call, slowest rank\n",
			sel, r.Op, units.FormatSize(int64(run.Bytes)), r.Ranks, r.Transport, len(run.Calls))
		draws := map[string]int{}
		for _, c := range run.Calls {
			draws[c.Algo]++
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		walls := run.WallUS > 0 // back to back: each series' elapsed time per call too
		wall := func(us float64) string {
			if !walls {
				return ""
			}
			return fmt.Sprintf("%.1f\t", us)
		}
		head := "algorithm\tmean\tmedian\t"
		if walls {
			head += "wall\t"
		}
		fmt.Fprintf(tw, "%sdrawn by %s\t\n", head, sel)
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%s%d\t\n", sel, run.MeanUS, run.MedianUS, wall(run.WallUS), len(run.Calls))
		best, table, bestWall := run.Fixed[0], run.Fixed[0], run.Fixed[0]
		for _, f := range run.Fixed {
			mark := ""
			if f.Table {
				mark, table = " (table)", f
			}
			if f.MeanUS < best.MeanUS {
				best = f
			}
			if f.WallUS < bestWall.WallUS {
				bestWall = f
			}
			fmt.Fprintf(tw, "%s%s\t%.1f\t%.1f\t%s%d\t\n", f.Algo, mark, f.MeanUS, f.MedianUS, wall(f.WallUS), draws[f.Algo])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "%s / best fixed (%s): %.2f; %s / table (%s): %.2f; best / table: %.2f\n",
			sel, best.Algo, run.MeanUS/best.MeanUS, sel, table.Algo, run.MeanUS/table.MeanUS, best.MeanUS/table.MeanUS)
		if walls {
			fmt.Fprintf(w, "by wall time per call (what back-to-back calls cost a program): %s / best fixed (%s): %.2f; %s / table: %.2f\n",
				sel, bestWall.Algo, run.WallUS/bestWall.WallUS, sel, run.WallUS/table.WallUS)
		}
		explored := 0
		for _, c := range run.Calls[max(run.Settled-1, 0):] {
			if c.Algo != run.Leader {
				explored++
			}
		}
		fmt.Fprintf(w, "settled at call %d of %d on %s; after it, %d calls (%.0f%%) ran another candidate\n",
			run.Settled, len(run.Calls), run.Leader, explored, 100*float64(explored)/float64(max(len(run.Calls)-run.Settled+1, 1)))
		if err := writeConvergence(w, run.Calls); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return nil
}

func writeConvergence(w io.Writer, calls []LotteryCall) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "calls\tmean us\tdrawn most\tshare\tleader at end\n")
	per := max((len(calls)+convergenceWindows-1)/convergenceWindows, 1)
	for lo := 0; lo < len(calls); lo += per {
		win := calls[lo:min(lo+per, len(calls))]
		ts := make([]float64, len(win))
		count := map[string]int{}
		for i, c := range win {
			ts[i] = c.TimeUS
			count[c.Algo]++
		}
		names := make([]string, 0, len(count))
		for name := range count {
			names = append(names, name)
		}
		slices.Sort(names)
		most := names[0]
		for _, name := range names {
			if count[name] > count[most] {
				most = name
			}
		}
		fmt.Fprintf(tw, "%d-%d\t%.1f\t%s\t%.0f%%\t%s\n", lo+1, lo+len(win), stats.Mean(ts), most,
			100*float64(count[most])/float64(len(win)), win[len(win)-1].Leader)
	}
	return tw.Flush()
}
