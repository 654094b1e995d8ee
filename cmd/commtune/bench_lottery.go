package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/job"
	"github.com/commtune/commtune/internal/launch"
)

// collSelect is the Option that sets how collective algorithms are chosen.
func collSelect(how string) commtune.Option {
	return func(c *commtune.Config) { c.CollSelect = how }
}

// lotteryMain is `commtune bench coll --algo lottery` and `--algo learn`
// (how, the selection): cfg.Calls calls through the selection at each
// size, against each of its candidates alone (lottery) or every algorithm
// of the operation (learn, cfg.Forced). The selection starts from nothing,
// whatever state earlier jobs saved, unless COMMTUNE_TUNE_STATE names a
// file: a run then measures it as that state leaves it, and adds what it
// learned there.
func lotteryMain(cfg bench.LotteryConfig, how string, n int, transport string, asJSON bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if transport != "inproc" && transport != "auto" && transport != "tcp" && transport != "shm" {
		return usageError("bench", "--transport %q: want auto, tcp, shm or inproc", transport)
	}
	bar := newBar(os.Stderr, "measuring", len(cfg.Sizes)*bench.LotteryBlocks(cfg.Calls))
	progress := func(done, total int, what string) {
		bar.Describe(what)
		bar.Set(done)
	}
	rep, err := runLotteryBench(ctx, cfg, how, n, transport, nil, progress)
	bar.Finish()
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench coll: %v\n", err)
		return 1
	}
	if asJSON {
		err = json.NewEncoder(os.Stdout).Encode(rep)
	} else {
		err = bench.WriteLotteryTable(os.Stdout, rep)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench coll: %v\n", err)
		return 1
	}
	return 0
}

// runLotteryBench runs the ranks of `bench coll --algo lottery|learn` on
// transport (inproc, auto, tcp or shm), processes with env added, and
// returns rank 0's report.
func runLotteryBench(ctx context.Context, cfg bench.LotteryConfig, how string, n int, transport string, env []string,
	progress func(done, total int, what string)) (*bench.LotteryReport, error) {
	rep := &bench.LotteryReport{Op: string(cfg.Op), Ranks: n, Transport: transport}
	var err error
	switch transport {
	case "inproc":
		cfg.Progress = progress
		err = commtune.Local(n, func(c *commtune.Comm) error {
			runs, err := bench.CollLottery(ctx, c, cfg)
			if c.Rank() == 0 {
				rep.Runs = runs
			}
			return err
		}, collSelect(how))
	case "auto", "tcp", "shm":
		var argv []string
		argv, err = launch.Self("bench-rank", "lottery", "--op", string(cfg.Op), "--sizes", joinSizes(cfg.Sizes),
			"--calls", strconv.Itoa(cfg.Calls), "--timing", string(cfg.Timing), "--transport", transport,
			"--forced", strings.Join(cfg.Forced, ","), "--forced-calls", strconv.Itoa(cfg.ForcedCalls))
		if err != nil {
			break
		}
		env = append(env, commtune.EnvCollSelect+"="+how)
		if _, set := os.LookupEnv(commtune.EnvTuneState); !set {
			env = append(env, commtune.EnvTuneState+"="+commtune.TuneStateOff)
		}
		err = benchProcesses(ctx, argv, n, 1, transport, env, progress, rep)
	}
	rep.Bench = "coll-" + how // rank 0's report names neither
	if how == bench.Learn {
		rep.Select = how
	}
	return rep, err
}

// lotteryRankMain is the hidden `commtune bench-rank lottery ...`: one
// rank of the lottery benchmark.
func lotteryRankMain(args []string) int {
	fs := newFlagSet("bench-rank lottery", "--op OP --sizes ... --calls N")
	op := fs.String("op", "", "operation")
	sizesFlag := fs.String("sizes", defaultCollSizes, "sizes")
	calls := fs.Int("calls", 2000, "calls")
	transport := fs.String("transport", "auto", "transport in use (for the report)")
	timingFlag := fs.String("timing", string(bench.BarrierEach), "barrier (interleaved) or back-to-back (the lottery first)")
	forced := fs.String("forced", "", "the algorithms forced against the selection, comma-separated (empty: its candidates)")
	forcedCalls := fs.Int("forced-calls", 0, "calls of each forced algorithm (0: --calls)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	timing, err := bench.ParseTiming(*timingFlag)
	if err != nil {
		return usageError("bench-rank", "--timing: %v", err)
	}
	sizes, err := rankSizes(*sizesFlag)
	if err != nil {
		return usageError("bench-rank", "--sizes: %v", err)
	}
	cfg := bench.LotteryConfig{Op: coll.Operation(*op), Calls: *calls, ForcedCalls: *forcedCalls, Sizes: sizes, Timing: timing, Progress: rankProgress()}
	if *forced != "" {
		cfg.Forced, cfg.Applies = strings.Split(*forced, ","), segmentApplies
	}
	if *transport != "tcp" {
		// The ranks share this node's memory: their lottery draws from
		// the profile's sampled table, as the ranks' Init loads it.
		c, err := config.Build(os.LookupEnv, nil)
		if err != nil {
			return usageError("bench-rank", "%v", err)
		}
		cfg.Table, _ = job.CollTableFor(c, infoProfile())
	}
	return runRank(func(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (any, error) {
		runs, err := bench.CollLottery(ctx, c, cfg)
		if c.Rank() != 0 || err != nil {
			return nil, err
		}
		return &bench.LotteryReport{Op: *op, Ranks: c.Size(), Transport: *transport, Runs: runs}, nil
	})
}
