package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/launch"
	"github.com/commtune/commtune/internal/units"
)

const defaultCollSizes = "8,1K,16K,256K,1M"

// collMain is `commtune bench coll --op OP [-n N] [--nodes K] [--algo
// NAME|all|auto|lottery] [--sizes ...] [--iters K] [--timing
// back-to-back|barrier] [--calls N] [--transport auto|tcp|shm|inproc]
// [--persistent] [--json]`.
func collMain(args []string) int {
	fs := newFlagSet("bench coll", "--op OP [-n 4] [--nodes 1] [--algo auto|all|lottery|NAME,...] [--sizes "+defaultCollSizes+"] [--iters 2000] [--timing back-to-back|barrier] [--calls 2000] [--transport auto|tcp|shm|inproc] [--persistent] [--vs mpi [--rounds 3]] [--json]")
	var ops []string
	for _, op := range coll.Operations {
		ops = append(ops, string(op))
	}
	opFlag := fs.String("op", "", "operation: "+strings.Join(ops, ", "))
	ranks := fs.Int("n", 4, "ranks")
	nodes := fs.Int("nodes", 1, "split the ranks into this many pretend nodes (as commtune run --nodes): shared memory within each, TCP between them; with --algo all, the hierarchical algorithms run too")
	algo := fs.String("algo", bench.Auto, "auto (the decision table), all (every algorithm of the operation), lottery (the lottery scheduler against each of its candidates), learn (what a program gets with no setting, from a cold start, against every algorithm), or algorithm names, comma-separated (bcast/binomial/seg=16K or binomial:seg=16K)")
	calls := fs.Int("calls", 2000, "with --algo lottery or learn: calls through the selection, and of each algorithm it is compared with, per size")
	forcedCalls := fs.Int("forced-calls", 0, "with --algo learn: calls of each forced algorithm, per size (0: --calls)")
	sizesFlag := fs.String("sizes", defaultCollSizes, "sizes in bytes, comma-separated: the vector for bcast and the reductions (reduce, allreduce, reducescatterblock, reducescatter, scan, exscan), one rank's block otherwise")
	iters := fs.Int("iters", 2000, "timed calls per algorithm and size for small sizes; large sizes use fewer (at least 20)")
	timingFlag := fs.String("timing", string(bench.BackToBack), timingUsage)
	transport := fs.String("transport", "auto", "auto (shared memory on this node), tcp, shm, or inproc (goroutine ranks in this process)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	persistent := fs.Bool("persistent", false, "time persistent requests (the operation's …Init once per size and algorithm, then Start and Wait per call) instead of blocking calls")
	vs := fs.String("vs", "", vsUsage)
	rounds := fs.Int("rounds", 3, roundsUsage)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	op := coll.Operation(strings.ToLower(*opFlag))
	if _, err := coll.Parse(op, "x"); err != nil && strings.HasPrefix(err.Error(), "unknown collective") {
		return usageError("bench", "--op %q: want one of %s", *opFlag, strings.Join(ops, ", "))
	}
	if *ranks < 1 || *ranks > 1024 {
		return usageError("bench", "-n %d: want 1 to 1024 ranks", *ranks)
	}
	if *iters < 1 {
		return usageError("bench", "--iters must be at least 1 (got %d)", *iters)
	}
	if *nodes < 1 || *nodes > *ranks {
		return usageError("bench", "--nodes %d: want 1 to -n (%d)", *nodes, *ranks)
	}
	if *nodes > 1 && (*transport == "inproc" || *vs != "" || *algo == bench.Lottery || *algo == bench.Learn) {
		return usageError("bench", "--nodes runs processes of commtune alone: leave out --transport inproc, --vs, --algo lottery and --algo learn")
	}
	sizes, err := units.ParseSizes(*sizesFlag)
	if err != nil {
		return usageError("bench", "--sizes: %v", err)
	}
	timing, err := bench.ParseTiming(*timingFlag)
	if err != nil {
		return usageError("bench", "--timing: %v", err)
	}
	if *persistent && (*algo == bench.Lottery || *algo == bench.Learn || *vs != "") {
		return usageError("bench", "--persistent times fixed algorithms of commtune: leave out --algo lottery, --algo learn and --vs")
	}
	var algos []string
	switch *algo {
	case bench.Lottery, bench.Learn:
		if *calls < 1 || *forcedCalls < 0 {
			return usageError("bench", "--calls must be at least 1 and --forced-calls not negative (got %d, %d)", *calls, *forcedCalls)
		}
		if *vs != "" {
			return usageError("bench", "--vs compares fixed algorithms: leave it out with --algo %s", *algo)
		}
		// The lottery's default timing is a barrier before each call, its
		// calls interleaved with the candidates'; back-to-back runs its
		// calls first, from a cold start, as a program pays them.
		ltiming := bench.BarrierEach
		if flagSet(fs, "timing") {
			ltiming = timing
		}
		lsizes, err := sizeList(sizes, 1<<28)
		if err != nil {
			return usageError("bench", "--sizes: %v", err)
		}
		lcfg := bench.LotteryConfig{Op: op, Sizes: lsizes, Calls: *calls, Timing: ltiming}
		if *algo == bench.Learn {
			// What a program gets with no setting, from its first call,
			// against every algorithm forced.
			if flagSet(fs, "timing") && timing != bench.BackToBack {
				return usageError("bench", "--algo learn times its calls back to back, from a cold start: leave out --timing")
			}
			lcfg.Timing, lcfg.Forced, lcfg.Applies = bench.BackToBack, allAlgorithms(op, *transport, *nodes), segmentApplies
			lcfg.ForcedCalls = *forcedCalls
		}
		return lotteryMain(lcfg, *algo, *ranks, *transport, *asJSON)
	case bench.Auto:
		algos = []string{bench.Auto}
	case "all":
		algos = allAlgorithms(op, *transport, *nodes)
	default:
		for _, name := range strings.Split(*algo, ",") {
			a, err := coll.Parse(op, name)
			if err != nil {
				return usageError("bench", "--algo: %v", err)
			}
			algos = append(algos, a.Name())
		}
	}
	cfg := bench.CollConfig{Op: op, Algorithms: algos, Iters: *iters, Timing: timing, Applies: segmentApplies, Persistent: *persistent}
	if cfg.Sizes, err = sizeList(sizes, 1<<28); err != nil {
		return usageError("bench", "--sizes: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *vs != "" {
		switch {
		case *transport == "inproc":
			return usageError("bench", "--vs needs processes: --transport auto, tcp or shm")
		case *rounds < 1:
			return usageError("bench", "--rounds must be at least 1 (got %d)", *rounds)
		}
		return vsColl(ctx, cfg, *ranks, *transport, *vs, *rounds, *asJSON)
	}
	bar := newBar(os.Stderr, "measuring", len(cfg.Sizes)*len(algos))
	progress := func(done, total int, what string) {
		bar.Describe(what)
		bar.Set(done)
	}
	var rep *bench.CollReport
	switch *transport {
	case "inproc":
		cfg.Progress = progress
		err = commtune.Local(*ranks, func(c *commtune.Comm) error {
			res, err := bench.Coll(ctx, c, cfg)
			if c.Rank() == 0 && err == nil {
				rep = &bench.CollReport{Bench: "coll", Op: string(op), Ranks: *ranks, Transport: "inproc", Timing: timing, Persistent: cfg.Persistent, Results: res}
			}
			return err
		}, collSelect(commtune.CollSelectTable))
	case "auto", "tcp", "shm":
		rep, err = collProcesses(ctx, cfg, *ranks, *nodes, *transport, progress)
	default:
		return usageError("bench", "--transport %q: want auto, tcp, shm or inproc", *transport)
	}
	bar.Finish()
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench coll: %v\n", err)
		return 1
	}
	if *asJSON {
		err = json.NewEncoder(os.Stdout).Encode(rep)
	} else {
		err = bench.WriteCollTable(os.Stdout, rep)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench coll: %v\n", err)
		return 1
	}
	return 0
}

// collProgress is a progress line rank 0 writes before its report.
type collProgress struct {
	Done  int    `json:"done"`
	Total int    `json:"total"`
	What  string `json:"what"`
}

// collProcesses runs the benchmark on ranks started through the launcher;
// rank 0 prints progress lines, then its report, as JSON on stdout. The
// ranks use the decision table: "auto" is the table's choice.
func collProcesses(ctx context.Context, cfg bench.CollConfig, n, nodes int, transport string, progress func(int, int, string)) (*bench.CollReport, error) {
	argv, err := launch.Self("bench-rank", "coll", "--op", string(cfg.Op), "--algos", strings.Join(cfg.Algorithms, ","),
		"--sizes", joinSizes(cfg.Sizes), "--iters", strconv.Itoa(cfg.Iters), "--timing", string(cfg.Timing), "--transport", transport,
		"--persistent="+strconv.FormatBool(cfg.Persistent))
	if err != nil {
		return nil, err
	}
	var rep bench.CollReport
	err = benchProcesses(ctx, argv, n, nodes, transport, []string{commtune.EnvCollSelect + "=" + commtune.CollSelectTable}, progress, &rep)
	if err != nil {
		return nil, err
	}
	return &rep, nil
}

func joinSizes(sizes []int) string {
	s := make([]string, len(sizes))
	for i, x := range sizes {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// benchProcesses runs argv as n ranks (on nodes pretend nodes, when more
// than 1) over transport with env added to theirs, passes rank 0's progress lines to progress and decodes its last
// line, the report, into rep.
func benchProcesses(ctx context.Context, argv []string, n, nodes int, transport string, env []string, progress func(int, int, string), rep any) error {
	switch transport {
	case "tcp":
		env = append(env, commtune.EnvTransports+"=tcp")
	case "shm":
		env = append(env, commtune.EnvTransports+"=shm,tcp")
	}
	var report []byte
	lines := &lineWriter{fn: func(line []byte) {
		var p collProgress
		if bytes.HasPrefix(line, []byte(`{"done"`)) && json.Unmarshal(line, &p) == nil {
			progress(p.Done, p.Total, p.What)
			return
		}
		report = append(report[:0], line...)
	}}
	var stderr strings.Builder
	err := launch.Run(ctx, launch.Options{N: n, Nodes: nodes, Args: argv, Env: env, Stdout: lines, Stderr: &stderr})
	lines.Flush()
	if err != nil {
		if stderr.Len() > 0 {
			err = fmt.Errorf("%w\n%s", err, strings.TrimSpace(stderr.String()))
		}
		return err
	}
	if err := json.Unmarshal(report, rep); err != nil {
		return fmt.Errorf("reading rank 0's report %q: %w", report, err)
	}
	return nil
}

// lineWriter calls fn with each complete line written to it.
type lineWriter struct {
	buf []byte
	fn  func([]byte)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.fn(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

// Flush hands over a last line without a newline.
func (w *lineWriter) Flush() {
	if len(w.buf) > 0 {
		w.fn(w.buf)
		w.buf = nil
	}
}

// rankProgress returns the Progress function of a benchmark rank: rank 0
// writes each step as a JSON line on stdout, which the launching command
// shows (benchProcesses).
func rankProgress() func(done, total int, what string) {
	out := bufio.NewWriter(os.Stdout)
	return func(done, total int, what string) {
		json.NewEncoder(out).Encode(collProgress{done, total, what})
		out.Flush()
	}
}

// rankSizes parses a bench rank's --sizes: the list its parent checked
// already, parsed the same way.
func rankSizes(s string) ([]int, error) {
	parsed, err := units.ParseSizes(s)
	if err != nil {
		return nil, err
	}
	return sizeList(parsed, 1<<28)
}

// collRankMain is the hidden `commtune bench-rank coll ...`: one rank of
// the collective benchmark.
func collRankMain(args []string) int {
	fs := newFlagSet("bench-rank coll", "--op OP --algos A,B --sizes ... --iters N --timing T [--persistent]")
	op := fs.String("op", "", "operation")
	algos := fs.String("algos", bench.Auto, "algorithm names, comma-separated")
	sizesFlag := fs.String("sizes", defaultCollSizes, "sizes")
	iters := fs.Int("iters", 2000, "timed calls")
	timingFlag := fs.String("timing", string(bench.BackToBack), "back-to-back or barrier")
	transport := fs.String("transport", "auto", "transport in use (for the report)")
	persistent := fs.Bool("persistent", false, "time persistent requests")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	sizes, err := rankSizes(*sizesFlag)
	if err != nil {
		return usageError("bench-rank", "--sizes: %v", err)
	}
	timing, err := bench.ParseTiming(*timingFlag)
	if err != nil {
		return usageError("bench-rank", "--timing: %v", err)
	}
	cfg := bench.CollConfig{Op: coll.Operation(*op), Algorithms: strings.Split(*algos, ","), Iters: *iters,
		Timing: timing, Sizes: sizes, Progress: rankProgress(), Applies: segmentApplies, Persistent: *persistent}
	return runRank(func(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (any, error) {
		res, err := bench.Coll(ctx, c, cfg)
		if c.Rank() != 0 || err != nil {
			return nil, err
		}
		return &bench.CollReport{Bench: "coll", Op: *op, Ranks: c.Size(), Transport: *transport, Timing: timing, Persistent: *persistent, Results: res}, nil
	})
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// segmentApplies says whether a benchmark's algorithm runs on ranks ranks
// at size bytes: every one but a node-segment algorithm beyond what the
// segment carries.
func segmentApplies(algo string, ranks, size int) bool {
	for _, op := range coll.Operations {
		if name, ok := comm.SegmentAlgorithm(op); ok && name == algo {
			return comm.SegmentCarries(op, ranks, size)
		}
	}
	return true
}

// allAlgorithms names every algorithm of op that runs on ranks reached by
// transport on nodes pretend nodes (--algo all).
func allAlgorithms(op coll.Operation, transport string, nodes int) []string {
	var algos []string
	for _, a := range coll.Algorithms(op) {
		algos = append(algos, a.Name())
	}
	if a, ok := coll.DirectAlgorithm(op); ok && transport == "inproc" {
		algos = append(algos, a.Name()) // goroutine ranks read each other's buffers
	}
	if name, ok := comm.SegmentAlgorithm(op); ok && transport != "tcp" && nodes == 1 {
		algos = append(algos, name) // ranks of one node share a segment
	}
	if a, ok := coll.HierarchicalAlgorithm(op); ok && nodes > 1 {
		algos = append(algos, a.Name()) // ranks of several nodes
	}
	return algos
}
