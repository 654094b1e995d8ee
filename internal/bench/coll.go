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
	"github.com/commtune/commtune/internal/stats"
	"github.com/commtune/commtune/internal/units"
)

// CollResult is one algorithm's time at one size.
type CollResult struct {
	Algo   string  `json:"algo"`
	Bytes  int     `json:"bytes"`
	TimeUS float64 `json:"time_us"` // median over iterations of the slowest rank's time
	// P90US and P99US are the 90th and 99th percentiles of the same
	// times: how far the slow calls stray from the median.
	P90US float64 `json:"p90_us"`
	P99US float64 `json:"p99_us"`
	// Auto marks the algorithm the decision table picks at this size.
	Auto bool `json:"auto,omitempty"`
}

// CollReport is the JSON document `commtune bench coll --json` prints.
type CollReport struct {
	Bench     string       `json:"bench"`
	Op        string       `json:"op"`
	Ranks     int          `json:"ranks"`
	Transport string       `json:"transport"`
	Results   []CollResult `json:"results"`
}

// Auto is the algorithm name that runs what the decision table picks.
const Auto = "auto"

// CollConfig says what to measure.
type CollConfig struct {
	Op         coll.Operation
	Algorithms []string // names, or Auto
	Sizes      []int    // bytes: the vector (bcast, reduce, allreduce) or one rank's block
	Iters      int      // timed iterations for small sizes; large ones use fewer
	// Progress, if set, is called on rank 0 after each size and
	// algorithm.
	Progress func(done, total int, what string)
}

// collBlocks is how many interleaved blocks each size's iterations are
// split into: every algorithm runs a block in turn, so that the machine's
// drifts (a slow regime lasting tens of milliseconds here) hit all alike.
const collBlocks = 5

// Coll times cfg.Op with each algorithm at each size on every rank of c;
// rank 0 returns the results. One iteration is a barrier, then the call;
// its time is the slowest rank's, from leaving the barrier to returning.
// Reductions sum float64 elements (sizes are rounded down to whole
// elements, at least one); the other operations move bytes.
func Coll(ctx context.Context, c *commtune.Comm, cfg CollConfig) ([]CollResult, error) {
	n := c.Size()
	reduction := cfg.Op == coll.OpReduce || cfg.Op == coll.OpAllreduce
	total := len(cfg.Sizes) * len(cfg.Algorithms)
	var out []CollResult
	for si, size := range cfg.Sizes {
		if reduction {
			size = max(size/8*8, 8)
		}
		if cfg.Op == coll.OpBarrier {
			size = 0
		}
		call, err := collCall(cfg.Op, n, c.Rank(), size)
		if err != nil {
			return nil, err
		}
		iters := Iterations(size*max(n-1, 1), cfg.Iters)
		per := max(iters/collBlocks, 1)
		times := make([][]time.Duration, len(cfg.Algorithms))
		opts := make([][]commtune.CollOption, len(cfg.Algorithms))
		for i, a := range cfg.Algorithms {
			if a != Auto {
				opts[i] = []commtune.CollOption{commtune.WithAlgorithm(a)}
			}
			// Warm up: connections, buffers, pools.
			for w := 0; w < 2; w++ {
				if err := call(ctx, c, opts[i]); err != nil {
					return nil, fmt.Errorf("%s at %d bytes: %w", a, size, err)
				}
			}
		}
		for b := 0; b < collBlocks; b++ {
			for k := range cfg.Algorithms {
				i := (k + b) % len(cfg.Algorithms) // rotate who goes first
				for it := 0; it < per; it++ {
					if err := c.Barrier(ctx); err != nil {
						return nil, err
					}
					start := time.Now()
					if err := call(ctx, c, opts[i]); err != nil {
						return nil, fmt.Errorf("%s at %d bytes: %w", cfg.Algorithms[i], size, err)
					}
					times[i] = append(times[i], time.Since(start))
				}
			}
		}
		for i, a := range cfg.Algorithms {
			// The slowest rank's time of each iteration.
			ns := make([]float64, len(times[i]))
			for j, d := range times[i] {
				ns[j] = float64(d.Nanoseconds())
			}
			slowest := make([]float64, len(ns))
			if err := commtune.Reduce(ctx, c, ns, slowest, commtune.Max, 0); err != nil {
				return nil, err
			}
			if c.Rank() == 0 {
				decided := coll.Decide(cfg.Op, n, size, true).Name()
				q := stats.Quantiles(slowest, 0.5, 0.9, 0.99)
				r := CollResult{Algo: a, Bytes: size, TimeUS: q[0] / 1e3, Auto: a == decided, P90US: q[1] / 1e3, P99US: q[2] / 1e3}
				if a == Auto {
					r.Algo, r.Auto = decided, true
				}
				out = append(out, r)
			}
			if cfg.Progress != nil && c.Rank() == 0 {
				cfg.Progress(si*len(cfg.Algorithms)+i+1, total, units.FormatSize(int64(size))+" bytes")
			}
		}
	}
	return out, nil
}

// collCall returns one call of op moving size bytes on rank me of n, with
// its buffers allocated once.
func collCall(op coll.Operation, n, me, size int) (func(context.Context, *commtune.Comm, []commtune.CollOption) error, error) {
	bytes := func(k int) []byte { return make([]byte, k) }
	switch op {
	case coll.OpBarrier:
		return func(ctx context.Context, c *commtune.Comm, o []commtune.CollOption) error {
			return c.Barrier(ctx, o...)
		}, nil
	case coll.OpBcast:
		buf := bytes(size)
		return func(ctx context.Context, c *commtune.Comm, o []commtune.CollOption) error {
			return commtune.Bcast(ctx, c, buf, 0, o...)
		}, nil
	case coll.OpReduce, coll.OpAllreduce:
		send, recv := make([]float64, size/8), make([]float64, size/8)
		for i := range send {
			send[i] = float64(i)
		}
		if op == coll.OpReduce {
			return func(ctx context.Context, c *commtune.Comm, o []commtune.CollOption) error {
				return commtune.Reduce(ctx, c, send, recv, commtune.Sum, 0, o...)
			}, nil
		}
		return func(ctx context.Context, c *commtune.Comm, o []commtune.CollOption) error {
			return commtune.Allreduce(ctx, c, send, recv, commtune.Sum, o...)
		}, nil
	case coll.OpScatter:
		send, recv := bytes(n*size), bytes(size)
		return func(ctx context.Context, c *commtune.Comm, o []commtune.CollOption) error {
			return commtune.Scatter(ctx, c, send, recv, 0, o...)
		}, nil
	case coll.OpGather:
		send, recv := bytes(size), bytes(n*size)
		return func(ctx context.Context, c *commtune.Comm, o []commtune.CollOption) error {
			return commtune.Gather(ctx, c, send, recv, 0, o...)
		}, nil
	case coll.OpAllgather:
		send, recv := bytes(size), bytes(n*size)
		return func(ctx context.Context, c *commtune.Comm, o []commtune.CollOption) error {
			return commtune.Allgather(ctx, c, send, recv, o...)
		}, nil
	case coll.OpAlltoall:
		send, recv := bytes(n*size), bytes(n*size)
		return func(ctx context.Context, c *commtune.Comm, o []commtune.CollOption) error {
			return commtune.Alltoall(ctx, c, send, recv, o...)
		}, nil
	case coll.OpScatterv, coll.OpGatherv, coll.OpAllgatherv:
		counts, displs := make([]int, n), make([]int, n)
		for r := range counts {
			counts[r], displs[r] = size, r*size
		}
		all, mine := bytes(n*size), bytes(size)
		return func(ctx context.Context, c *commtune.Comm, o []commtune.CollOption) error {
			switch op {
			case coll.OpScatterv:
				return commtune.Scatterv(ctx, c, all, counts, displs, mine, 0, o...)
			case coll.OpGatherv:
				return commtune.Gatherv(ctx, c, mine, all, counts, displs, 0, o...)
			}
			return commtune.Allgatherv(ctx, c, mine, all, counts, displs, o...)
		}, nil
	case coll.OpAlltoallv:
		counts, displs := make([]int, n), make([]int, n)
		for r := range counts {
			counts[r], displs[r] = size, r*size
		}
		send, recv := bytes(n*size), bytes(n*size)
		return func(ctx context.Context, c *commtune.Comm, o []commtune.CollOption) error {
			return commtune.Alltoallv(ctx, c, send, counts, displs, recv, counts, displs, o...)
		}, nil
	}
	return nil, fmt.Errorf("no benchmark for %q", op)
}

// WriteCollTable prints r with one line per algorithm and one column per
// size, the fastest at each size starred, then per size the fastest
// algorithm and the decision table's choice with its time as a ratio of
// the fastest.
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
	fmt.Fprintf(w, "# commtune bench coll: %s, %d ranks, transport %s; time (us) = median over iterations of the slowest rank; * fastest, + the decision table's choice\n",
		r.Op, r.Ranks, r.Transport)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "algorithm\t")
	for _, s := range sizes {
		fmt.Fprintf(tw, "%s\t", units.FormatSize(int64(s)))
	}
	fmt.Fprintln(tw)
	for _, a := range algos {
		fmt.Fprintf(tw, "%s\t", a)
		for i, s := range sizes {
			x, ok := at[a][s]
			if !ok {
				fmt.Fprint(tw, "-\t")
				continue
			}
			mark := ""
			if x.Algo == best[i].Algo {
				mark += "*"
			}
			if x.Auto {
				mark += "+"
			}
			fmt.Fprintf(tw, "%.1f%s\t", x.TimeUS, mark)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "size\tfastest\tus\ttable's choice\tus\tratio\tits p90\tp99\n")
	for i, s := range sizes {
		b := best[i]
		line := fmt.Sprintf("%s\t%s\t%.1f\t", units.FormatSize(int64(s)), b.Algo, b.TimeUS)
		choice := "(not measured)\t\t"
		for _, x := range r.Results {
			if x.Bytes == s && x.Auto {
				choice = fmt.Sprintf("%s\t%.1f\t%.2f\t%.1f\t%.1f", x.Algo, x.TimeUS, x.TimeUS/b.TimeUS, x.P90US, x.P99US)
			}
		}
		fmt.Fprintln(tw, line+choice)
	}
	return tw.Flush()
}

// BestBySize returns, per size in order, the fastest result.
func BestBySize(res []CollResult) []CollResult {
	var out []CollResult
	for _, r := range res {
		i := slices.IndexFunc(out, func(b CollResult) bool { return b.Bytes == r.Bytes })
		switch {
		case i < 0:
			out = append(out, r)
		case r.TimeUS < out[i].TimeUS:
			out[i] = r
		}
	}
	return out
}
