package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/launch"
	"github.com/commtune/commtune/internal/units"
)

func init() {
	register(command{name: "bench", summary: "measure commtune: bench pingpong, bench sweep (tuned against fixed thresholds), bench coll (collective algorithms), bench halo (halo exchange implementations and their run-time selection), bench multirail (each rail alone against split messages), bench rate (small-message rate, default against aggregation), bench startup (launch time and memory per job size), bench rma (one-sided Put, Get and FetchAndOp, OSU-style), bench soak (a long run of mixed traffic: every payload checked, memory, shared memory, descriptors and goroutines sampled, a verdict on leaks), bench overhead (what the counters and the timeline cost a small Allreduce)", run: benchMain})
	register(command{name: "bench-rank", summary: "one rank of a benchmark (started by bench)", run: benchRankMain, hidden: true})
}

const defaultSizes = "8,1K,64K,1M,4M"

// benchMain is `commtune bench pingpong [--transport inproc|tcp] [--sizes
// ...] [--iters N] [--baseline] [--json]`.
func benchMain(args []string) int {
	if len(args) > 0 && args[0] == "sweep" {
		return sweepMain(args[1:])
	}
	if len(args) > 0 && args[0] == "coll" {
		return collMain(args[1:])
	}
	if len(args) > 0 && args[0] == "halo" {
		return haloMain(args[1:])
	}
	if len(args) > 0 && args[0] == "multirail" {
		return multirailMain(args[1:])
	}
	if len(args) > 0 && args[0] == "rate" {
		return rateMain(args[1:])
	}
	if len(args) > 0 && args[0] == "startup" {
		return startupMain(args[1:])
	}
	if len(args) > 0 && args[0] == "floor" {
		return floorMain(args[1:])
	}
	if len(args) > 0 && args[0] == "rma" {
		return rmaMain(args[1:])
	}
	if len(args) > 0 && args[0] == "soak" {
		return soakMain(args[1:])
	}
	if len(args) > 0 && args[0] == "overhead" {
		return overheadMain(args[1:])
	}
	if len(args) == 0 || args[0] != "pingpong" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Println("usage: commtune bench pingpong|sweep|coll|halo|multirail|rate|startup|floor|rma|soak|overhead [flags]   (commtune bench NAME -h for flags)")
			return 0
		}
		return usageError("bench", "want a benchmark name: pingpong, sweep, coll, halo, multirail, rate, startup, floor, rma, soak or overhead")
	}
	fs := newFlagSet("bench pingpong", "[--transport inproc|tcp|shm] [--method auto|copy|cma|vmsplice|cachefree] [--sizes 8,1K,64K,1M,4M] [--iters 2000] [--baseline] [--vs mpi [--rounds 3]] [--json]")
	transport := fs.String("transport", "tcp", "inproc (goroutine ranks), tcp or shm (two processes through the launcher)")
	method := fs.String("method", "auto", "shm large-message method: "+strings.Join(commtune.ShmMethods, ", ")+", or all (one run each, one table)")
	sizesFlag := fs.String("sizes", defaultSizes, "message sizes, comma-separated (K, M suffixes are binary)")
	iters := fs.Int("iters", 2000, "timed round trips per size for small messages, back to back after 20 untimed ones and a barrier; large sizes use fewer (at least 20)")
	baseline := fs.Bool("baseline", false, "also time, interleaved, a plain Go TCP ping-pong between the same two ranks (tcp), or a plain copy() of each message in one process (shm, inproc), and print the ratios")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	vs := fs.String("vs", "", vsUsage)
	rounds := fs.Int("rounds", 3, roundsUsage)
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	sizes, err := units.ParseSizes(*sizesFlag)
	if err != nil {
		return usageError("bench", "--sizes: %v", err)
	}
	if *iters < 1 {
		return usageError("bench", "--iters must be at least 1 (got %d)", *iters)
	}
	if *method != "all" && !slices.Contains(commtune.ShmMethods, *method) {
		return usageError("bench", "--method %q: want one of %s", *method, strings.Join(commtune.ShmMethods, ", "))
	}
	if *method != "auto" && *transport != "shm" {
		return usageError("bench", "--method applies to --transport shm only")
	}
	cfg := bench.PingPongConfig{Iters: *iters}
	if *baseline {
		cfg.Baseline = bench.BaselineCopy
		if *transport == "tcp" {
			cfg.Baseline = bench.BaselineRawTCP
		}
	}
	if cfg.Sizes, err = sizeList(sizes, 1<<30); err != nil {
		return usageError("bench", "--sizes: %v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *vs != "" {
		switch {
		case *transport != "tcp" && *transport != "shm":
			return usageError("bench", "--vs needs --transport tcp or shm (processes, as MPI runs)")
		case *method == "all" || *baseline:
			return usageError("bench", "--vs takes one --method and no --baseline")
		case *rounds < 1:
			return usageError("bench", "--rounds must be at least 1 (got %d)", *rounds)
		}
		return vsPingPong(ctx, cfg, *transport, *method, *vs, *rounds, *asJSON)
	}
	var rep *bench.Report
	switch *transport {
	case "inproc":
		rep, err = pingPongLocal(ctx, cfg)
	case "tcp", "shm":
		if *method == "all" {
			return pingPongAllMethods(ctx, cfg, *asJSON)
		}
		rep, err = pingPongProcesses(ctx, cfg, *transport, *method)
	default:
		return usageError("bench", "--transport %q: want inproc, tcp or shm", *transport)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench pingpong: %v\n", err)
		return 1
	}
	if *asJSON {
		err = bench.WriteJSON(os.Stdout, rep)
	} else {
		err = bench.WriteTable(os.Stdout, rep)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench pingpong: %v\n", err)
		return 1
	}
	return 0
}

// sizeList checks sizes against a limit and converts them.
func sizeList(sizes []int64, limit int64) ([]int, error) {
	out := make([]int, len(sizes))
	for i, s := range sizes {
		if s > limit {
			return nil, fmt.Errorf("%s is larger than %s", units.FormatSize(s), units.FormatSize(limit))
		}
		out[i] = int(s)
	}
	return out, nil
}

func newReport(transport, method string, res []bench.Result, bases []bench.Baseline) *bench.Report {
	return &bench.Report{Bench: "pingpong", Transport: transport, Method: method, Ranks: 2, Timing: bench.BackToBack, Results: res, Baselines: bases}
}

func pingPongLocal(ctx context.Context, cfg bench.PingPongConfig) (*bench.Report, error) {
	var rep *bench.Report
	var tap control.Tap
	err := commtune.Local(2, func(c *commtune.Comm) error {
		res, base, err := bench.PingPong(ctx, c, tap.Of(c.Rank()), cfg)
		if c.Rank() == 0 && err == nil {
			rep = newReport("inproc", "auto", res, base)
		}
		return err
	}, config.WithTap(&tap))
	return rep, err
}

// pingPongAllMethods runs the shm ping-pong once per method and prints one
// table: each method's bandwidth per size, with the plain-copy baselines of
// the auto run (or one JSON report per line with --json).
func pingPongAllMethods(ctx context.Context, cfg bench.PingPongConfig, asJSON bool) int {
	var reps []*bench.Report
	for _, m := range commtune.ShmMethods {
		c := cfg
		if m != "auto" {
			c.Baseline = "" // the auto run carries the baselines
		}
		rep, err := pingPongProcesses(ctx, c, "shm", m)
		if err != nil {
			fmt.Fprintf(os.Stderr, "commtune bench pingpong: method %s: %v\n", m, err)
			return 1
		}
		reps = append(reps, rep)
	}
	if asJSON {
		for _, r := range reps {
			bench.WriteJSON(os.Stdout, r)
		}
		return 0
	}
	if err := bench.WriteMethodTable(os.Stdout, reps); err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench pingpong: %v\n", err)
		return 1
	}
	return 0
}

// pingPongProcesses starts two ranks of this executable through the
// launcher, on the given transport and shm method; rank 0 prints its report
// as JSON on stdout.
func pingPongProcesses(ctx context.Context, cfg bench.PingPongConfig, transport, method string) (*bench.Report, error) {
	sizes := make([]string, len(cfg.Sizes))
	for i, s := range cfg.Sizes {
		sizes[i] = strconv.Itoa(s)
	}
	argv, err := launch.Self("bench-rank", "pingpong", "--sizes", strings.Join(sizes, ","),
		"--iters", strconv.Itoa(cfg.Iters), "--baseline="+cfg.Baseline,
		"--transport", transport, "--method", method)
	if err != nil {
		return nil, err
	}
	env := []string{commtune.EnvTransports + "=tcp"}
	if transport == "shm" {
		env = []string{commtune.EnvTransports + "=shm,tcp", commtune.EnvShmMethod + "=" + method}
	}
	var out bytes.Buffer
	if err := launch.Run(ctx, launch.Options{N: 2, Args: argv, Env: env, Stdout: &out}); err != nil {
		return nil, err
	}
	var rep bench.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("reading rank 0's report %q: %w", out.String(), err)
	}
	return &rep, nil
}

// benchRankMain is the hidden `commtune bench-rank pingpong ...`: one rank
// of a benchmark, started by the launcher.
func benchRankMain(args []string) int {
	if len(args) > 0 && args[0] == "sweep" {
		return sweepRankMain(args[1:])
	}
	if len(args) > 0 && args[0] == "coll" {
		return collRankMain(args[1:])
	}
	if len(args) > 0 && args[0] == "halo" {
		return haloRankMain(args[1:])
	}
	if len(args) > 0 && args[0] == "lottery" {
		return lotteryRankMain(args[1:])
	}
	if len(args) > 0 && args[0] == "startup" {
		return startupRankMain(args[1:])
	}
	if len(args) > 0 && args[0] == "rma" {
		return rmaRankMain(args[1:])
	}
	if len(args) > 0 && args[0] == "soak" {
		return soakRankMain(args[1:])
	}
	if len(args) > 0 && args[0] == "overhead" {
		return overheadRankMain(args[1:])
	}
	if len(args) == 0 || args[0] != "pingpong" {
		return usageError("bench-rank", "want a benchmark name")
	}
	fs := newFlagSet("bench-rank pingpong", "--sizes ... --iters N")
	sizesFlag := fs.String("sizes", defaultSizes, "message sizes")
	iters := fs.Int("iters", 2000, "round trips per size")
	baseline := fs.String("baseline", "", "raw-tcp or copy")
	transport := fs.String("transport", "tcp", "transport in use (for the report)")
	method := fs.String("method", "auto", "shm method in use (for the report)")
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	sizes, err := units.ParseSizes(*sizesFlag)
	if err != nil {
		return usageError("bench-rank", "--sizes: %v", err)
	}
	cfg := bench.PingPongConfig{Iters: *iters, Baseline: *baseline}
	for _, s := range sizes {
		cfg.Sizes = append(cfg.Sizes, int(s))
	}
	return runRank(func(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (any, error) {
		res, base, err := bench.PingPong(ctx, c, ep, cfg)
		if c.Rank() != 0 || err != nil {
			return nil, err
		}
		return newReport(*transport, *method, res, base), nil
	})
}
