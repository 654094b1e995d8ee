package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/collcall"
	"github.com/commtune/commtune/internal/units"
)

// CollResult is one algorithm's time at one size: the distribution, over
// the timed calls, of each call's time on the slowest rank.
type CollResult struct {
	Algo   string  `json:"algo"`
	Bytes  int     `json:"bytes"`
	TimeUS float64 `json:"time_us"` // median over calls of the slowest rank's time
	// MeanUS is the mean of the same times: what a call cost on average,
	// the tail included.
	MeanUS float64 `json:"mean_us"`
	// P90US, P99US and MaxUS are the 90th and 99th percentiles and the
	// largest of the same times: how far the slow calls stray.
	P90US float64 `json:"p90_us"`
	P99US float64 `json:"p99_us"`
	MaxUS float64 `json:"max_us"`
	// Calls is how many calls were timed.
	Calls int `json:"calls"`
	// Auto marks the algorithm the decision table picks at this size.
	Auto bool `json:"auto,omitempty"`
}

// Summary returns r's times as a Summary.
func (r CollResult) Summary() Summary {
	return Summary{Calls: r.Calls, Mean: r.MeanUS, P50: r.TimeUS, P90: r.P90US, P99: r.P99US, Max: r.MaxUS}
}

// collResult is the result of algo at size with times s.
func collResult(algo string, size int, s Summary) CollResult {
	return CollResult{Algo: algo, Bytes: size, TimeUS: s.P50, MeanUS: s.Mean, P90US: s.P90, P99US: s.P99, MaxUS: s.Max, Calls: s.Calls}
}

// CollReport is the JSON document `commtune bench coll --json` prints.
type CollReport struct {
	Bench     string `json:"bench"`
	Op        string `json:"op"`
	Ranks     int    `json:"ranks"`
	Transport string `json:"transport"`
	Timing    Timing `json:"timing"`
	// Persistent says the calls timed were starts of persistent
	// requests (CollConfig.Persistent).
	Persistent bool         `json:"persistent,omitempty"`
	Results    []CollResult `json:"results"`
}

// Auto is the algorithm name that runs what the decision table picks.
const Auto = "auto"

// CollConfig says what to measure.
type CollConfig struct {
	Op         coll.Operation
	Algorithms []string // names, or Auto
	Sizes      []int    // bytes: the vector (bcast, reduce, allreduce) or one rank's block
	Iters      int      // timed calls for small sizes; large ones use fewer
	Timing     Timing   // how calls are timed; "" is BackToBack
	// Progress, if set, is called on rank 0 after each size and
	// algorithm.
	Progress func(done, total int, what string)
	// Applies, if set, says whether an algorithm runs on a number of
	// ranks at a size (bytes as in Sizes): the node segment's carry small
	// calls only.
	Applies func(algo string, ranks, size int) bool
	// Persistent times persistent requests (commtune's …Init, made once
	// per size and algorithm): each timed call is a Start and its Wait.
	Persistent bool
}

// collBlocks is how many interleaved blocks each size's iterations are
// split into under BarrierEach: every algorithm runs a block in turn, so
// that the machine's drifts (a slow regime lasting tens of milliseconds
// here) hit all alike.
const collBlocks = 5

// Coll times cfg.Op with each algorithm at each size on every rank of c;
// rank 0 returns the results. Each rank times each call; a call's time is
// the slowest rank's.
//
// BackToBack: per size and algorithm, untimed calls for WarmupTime, then
// Iterations(size·(n−1), cfg.Iters) calls back to back, each timed from
// the end of the one before (or a barrier) to its own; several algorithms
// take turns in blocks (collBackToBack).
// BarrierEach: two untimed calls per algorithm, then per timed call a
// barrier and the call, timed from leaving the barrier to returning, the
// calls split into blocks the algorithms take in turn.
//
// Reductions sum float64 elements (sizes are rounded as collcall.Size says;
// ReduceScatter's blocks are collcall.EvenCounts); the other operations move
// bytes.
func Coll(ctx context.Context, c *commtune.Comm, cfg CollConfig) ([]CollResult, error) {
	n := c.Size()
	timing, err := ParseTiming(string(cfg.Timing))
	if err != nil {
		return nil, err
	}
	total := len(cfg.Sizes) * len(cfg.Algorithms)
	var out []CollResult
	all := cfg.Algorithms
	for si, size := range cfg.Sizes {
		size = collcall.Size(cfg.Op, n, size)
		cfg.Algorithms = nil
		for _, a := range all {
			if cfg.Applies == nil || cfg.Applies(a, n, size) {
				cfg.Algorithms = append(cfg.Algorithms, a)
			}
		}
		call, err := collcall.New(cfg.Op, n, c.Rank(), size)
		if err != nil {
			return nil, err
		}
		opts := make([][]commtune.CollOption, len(cfg.Algorithms))
		var chosen commtune.CollChoice // what the table runs here
		for i, a := range cfg.Algorithms {
			if a != Auto {
				opts[i] = []commtune.CollOption{commtune.WithAlgorithm(a)}
			} // auto: no option, as an application calls
		}
		run := func(i int) error {
			if err := call(ctx, c, opts[i]); err != nil {
				return fmt.Errorf("%s at %d bytes: %w", cfg.Algorithms[i], size, err)
			}
			return nil
		}
		var reqs []*commtune.Prequest
		if cfg.Persistent {
			if reqs, err = persistentCalls(c, cfg.Op, size, opts); err != nil {
				return nil, err
			}
			run = func(i int) error {
				err := reqs[i].Start()
				if err == nil {
					_, err = reqs[i].Wait(ctx)
				}
				if err != nil {
					return fmt.Errorf("%s at %d bytes, persistent: %w", cfg.Algorithms[i], size, err)
				}
				return nil
			}
		}
		// One untimed call says what the table runs here (pulled or not,
		// direct for goroutine ranks), to name auto and mark the results;
		// the timed calls take no option, which would allocate.
		if err := call(ctx, c, []commtune.CollOption{commtune.WithChoice(&chosen)}); err != nil {
			return nil, fmt.Errorf("the table's choice at %d bytes: %w", size, err)
		}
		iters := Iterations(size*max(n-1, 1), cfg.Iters)
		var times [][]time.Duration
		if timing == BarrierEach {
			times, err = collBarrierEach(ctx, c, len(opts), iters, run)
		} else {
			times, err = collBackToBack(ctx, c, len(opts), si, iters, run)
		}
		if err != nil {
			return nil, err
		}
		for _, p := range reqs {
			if err := p.Free(); err != nil {
				return nil, err
			}
		}
		for i, a := range cfg.Algorithms {
			slowest, err := slowestPerCall(ctx, c, times[i])
			if err != nil {
				return nil, err
			}
			if c.Rank() == 0 {
				decided := chosen.Algorithm
				r := collResult(a, size, SummaryOf(slowest))
				r.Auto = a == decided
				if a == Auto {
					r.Algo, r.Auto = decided, true
				}
				out = append(out, r)
			}
			if cfg.Progress != nil && c.Rank() == 0 {
				cfg.Progress(si*len(all)+i+1, total, units.FormatSize(int64(size))+" bytes")
			}
		}
	}
	return out, nil
}

// persistentCalls makes a persistent request of op at size with each
// algorithm's options, on buffers of its own (collcall.NewPersistent).
func persistentCalls(c *commtune.Comm, op coll.Operation, size int, opts [][]commtune.CollOption) ([]*commtune.Prequest, error) {
	reqs := make([]*commtune.Prequest, len(opts))
	for i, o := range opts {
		init, err := collcall.NewPersistent(op, c.Size(), c.Rank(), size)
		if err != nil {
			return nil, err
		}
		if reqs[i], err = init(c, o); err != nil {
			return nil, fmt.Errorf("persistent %s at %d bytes: %w", op, size, err)
		}
	}
	return reqs, nil
}

// collBackToBack times iters calls of each of algos algorithms back to
// back (Coll's BackToBack) and returns this rank's times per algorithm.
//
// Several algorithms take turns in blocks (backToBackBlocks), each
// warmed up first (WarmupTime) and each block after a barrier and
// blockWarmup untimed calls, the order rotating from block to block and
// starting from the first-th (mod algos) algorithm: this machine drifts
// over seconds (the same algorithm's mean moved 1.5x between stretches of
// one run), and only turns taken often give every algorithm the same
// share of each stretch. A single algorithm runs its calls in one block,
// as the reference's back-to-back run does.
func collBackToBack(ctx context.Context, c *commtune.Comm, algos, first, iters int, run func(int) error) ([][]time.Duration, error) {
	blocks := 1
	if algos > 1 {
		blocks = min(backToBackBlocks, iters)
	}
	times := make([][]time.Duration, algos)
	for k := range algos {
		i := (k + first) % algos
		if err := warmUp(ctx, c, func() error { return run(i) }); err != nil {
			return nil, err
		}
		times[i] = make([]time.Duration, 0, iters)
	}
	for b := range blocks {
		calls := iters/blocks + btoi(b < iters%blocks)
		for k := range algos {
			i := (k + first + b) % algos
			if blocks > 1 {
				for range blockWarmup {
					if err := run(i); err != nil {
						return nil, err
					}
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return nil, err
			}
			// One clock reading between calls: each call is timed from
			// the end of the one before, so the times add up to the run.
			prev := time.Now()
			for range calls {
				if err := run(i); err != nil {
					return nil, err
				}
				now := time.Now()
				times[i], prev = append(times[i], now.Sub(prev)), now
			}
		}
	}
	return times, nil
}

// backToBackBlocks is how many turns algorithms compared back to back
// take; blockWarmup the untimed calls before each turn, since the first
// call after another algorithm ran pays for the switch (buffers, caches).
const (
	backToBackBlocks = 8
	blockWarmup      = 2
)

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// collBarrierEach times iters calls of each of algos algorithms, each
// after a barrier (Coll's BarrierEach), and returns this rank's times per
// algorithm.
func collBarrierEach(ctx context.Context, c *commtune.Comm, algos, iters int, run func(int) error) ([][]time.Duration, error) {
	// Warm up: connections, buffers, pools.
	for i := range algos {
		for w := 0; w < 2; w++ {
			if err := run(i); err != nil {
				return nil, err
			}
		}
	}
	per := max(iters/collBlocks, 1)
	times := make([][]time.Duration, algos)
	for b := 0; b < collBlocks; b++ {
		for k := range algos {
			i := (k + b) % algos // rotate who goes first
			for it := 0; it < per; it++ {
				if err := c.Barrier(ctx); err != nil {
					return nil, err
				}
				start := time.Now()
				if err := run(i); err != nil {
					return nil, err
				}
				times[i] = append(times[i], time.Since(start))
			}
		}
	}
	return times, nil
}

// WriteCollTable prints r with one line per algorithm and, per size, the
// mean, median and 99th percentile of the slowest rank's times, the
// fastest mean at each size starred; then per size the fastest algorithm
// and the decision table's choice, its mean as a ratio of the fastest's,
// and its tail.
func WriteCollTable(w io.Writer, r *CollReport) error {
	var sizes []int
	var algos []string
	at := map[string]map[int]CollResult{}
	for _, x := range r.Results {
		if !slices.Contains(sizes, x.Bytes) {
			sizes = append(sizes, x.Bytes)
		}
		if at[x.Algo] == nil {
			algos = append(algos, x.Algo)
			at[x.Algo] = map[int]CollResult{}
		}
		at[x.Algo][x.Bytes] = x
	}
	best := BestBySize(r.Results)
	op := r.Op
	if r.Persistent {
		op += " (persistent: Start and Wait)"
	}
	fmt.Fprintf(w, "# commtune bench coll: %s, %d ranks, transport %s, %s; times (us) of the slowest rank per call: mean, p50, p99 over the calls; * fastest mean, + the decision table's choice\n",
		op, r.Ranks, r.Transport, timingLine(r.Timing))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "algorithm\t")
	for _, s := range sizes {
		fmt.Fprintf(tw, "%s mean\tp50\tp99\t", units.FormatSize(int64(s)))
	}
	fmt.Fprintln(tw)
	for _, a := range algos {
		fmt.Fprintf(tw, "%s\t", a)
		for i, s := range sizes {
			x, ok := at[a][s]
			if !ok {
				fmt.Fprint(tw, "-\t-\t-\t")
				continue
			}
			mark := ""
			if x.Algo == best[i].Algo {
				mark += "*"
			}
			if x.Auto {
				mark += "+"
			}
			fmt.Fprintf(tw, "%.1f%s\t%.1f\t%.1f\t", x.MeanUS, mark, x.TimeUS, x.P99US)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "size\tfastest\tmean\tp50\tp99\ttable's choice\tmean\tratio\tp50\tp90\tp99\tmax\tcalls\n")
	for i, s := range sizes {
		b := best[i]
		line := fmt.Sprintf("%s\t%s\t%.1f\t%.1f\t%.1f\t", units.FormatSize(int64(s)), b.Algo, b.MeanUS, b.TimeUS, b.P99US)
		choice := "(not measured)\t\t\t\t\t\t\t"
		for _, x := range r.Results {
			if x.Bytes == s && x.Auto {
				choice = fmt.Sprintf("%s\t%.1f\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t%d", x.Algo, x.MeanUS, x.MeanUS/b.MeanUS, x.TimeUS, x.P90US, x.P99US, x.MaxUS, x.Calls)
			}
		}
		fmt.Fprintln(tw, line+choice)
	}
	return tw.Flush()
}

// timingLine says in a table's heading how the calls were timed.
func timingLine(t Timing) string {
	switch t {
	case BarrierEach:
		return "a barrier before each call"
	case BackToBack:
		return "calls back to back"
	}
	return "timing " + string(t)
}

// BestBySize returns, per size in order, the result of the lowest mean.
func BestBySize(res []CollResult) []CollResult {
	var out []CollResult
	for _, r := range res {
		i := slices.IndexFunc(out, func(b CollResult) bool { return b.Bytes == r.Bytes })
		switch {
		case i < 0:
			out = append(out, r)
		case r.MeanUS < out[i].MeanUS:
			out[i] = r
		}
	}
	return out
}
