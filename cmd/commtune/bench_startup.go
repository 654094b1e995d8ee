package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/launch"
	"github.com/commtune/commtune/internal/units"
)

const (
	defaultStartupRanks = "8,32,64,128,256"
	startupUsage        = "[-n " + defaultStartupRanks + "] [--transport auto|tcp|shm] [--alltoall BYTES] [--vs mpi [--rounds 1]] [--json]"
)

// startupMain is `commtune bench startup`: what starting a job costs, per
// job size N on this node (oversubscribed past its processors). Each
// launch starts N ranks of a job that does one Allreduce and exits, and
// is timed from starting the launcher to the last rank's exit (wall) and
// to the last rank's Allreduce done (first collective), while a goroutine
// here samples the job's memory: the highest sum of its ranks' Pss, and
// how far the system's shared memory rose above idle. With --vs the same
// job built against an MPI runs under its launcher, alternating with
// commtune's at each N. A launch that fails is reported in its row and
// the other sizes still run; the exit status is then 1.
func startupMain(args []string) int {
	fs := newFlagSet("bench startup", startupUsage)
	ranksFlag := fs.String("n", defaultStartupRanks, "job sizes (ranks on this node), comma-separated")
	transport := fs.String("transport", "auto", "auto (shared memory on this node), tcp or shm")
	vs := fs.String("vs", "", "also launch the same job built against an installed MPI (mpi: the first of openmpi, mpich; or openmpi, mpich) under its launcher, alternating with commtune's at each size, and print both with ratios")
	alltoall := fs.String("alltoall", "", "after the first collective, each rank exchanges this many bytes with every other rank ("+strconv.Itoa(bench.StartupAlltoalls)+" Alltoalls, a multiple of 8, like 16K), so that peak memory shows dense traffic")
	rounds := fs.Int("rounds", 1, "launches of each side per size, alternating; each figure is the median over them")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	sizes, err := parseRankList(*ranksFlag)
	if err != nil {
		return usageError("bench startup", "-n: %v", err)
	}
	switch {
	case *transport != "auto" && *transport != "tcp" && *transport != "shm":
		return usageError("bench startup", "--transport %q: want auto, tcp or shm", *transport)
	case *rounds < 1:
		return usageError("bench startup", "--rounds must be at least 1 (got %d)", *rounds)
	}
	dense := 0
	if *alltoall != "" {
		n, err := units.ParseSize(*alltoall)
		if err != nil || n < 0 || n%8 != 0 || n > 1<<30 {
			return usageError("bench startup", "--alltoall %q: want bytes per peer, a multiple of 8 up to 1G", *alltoall)
		}
		dense = int(n)
	}
	// Both sides' ranks read it (internal/mpiref/csrc too).
	jobEnv := []string{bench.EnvStartupAlltoall + "=" + strconv.Itoa(dense)}
	// Fail at once, not once per launch, where memory cannot be sampled.
	if err := bench.CheckSystemMemory(); err != nil {
		fmt.Fprintf(os.Stderr, "commtune bench startup: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// A launch calls root with its launcher's pid: the job's processes are
	// the launcher's descendants, the launcher itself left out on both
	// sides. commtune's launcher runs in this process, which also samples
	// and holds the benchmark's own memory, so it cannot be counted
	// alone; mpirun is left out to match.
	type side struct {
		name   string
		launch func(n int, root func(pid int)) (bench.StartupTimes, error)
	}
	sides := []side{{"commtune", func(n int, root func(int)) (bench.StartupTimes, error) {
		root(os.Getpid())
		return startupProcesses(ctx, n, *transport, jobEnv)
	}}}
	rep := &bench.StartupReport{Bench: "startup", Transport: *transport, Rounds: *rounds, CPUs: runtime.NumCPU()}
	if *vs != "" {
		impl, bin, err := reference(ctx, *vs)
		if err != nil {
			fmt.Fprintf(os.Stderr, "commtune bench startup: --vs %s: %v\n", *vs, err)
			return 1
		}
		impl.TCP = *transport == "tcp" // compare transport with transport
		rep.Ref = impl.Name
		sides = append(sides, side{impl.Name, func(n int, root func(int)) (bench.StartupTimes, error) {
			return impl.Startup(ctx, bin, n, jobEnv, root)
		}})
	}

	bar := newBar(os.Stderr, "launching", len(sizes)**rounds*len(sides))
	step := 0
	for _, n := range sizes {
		samples := make([][]bench.StartupSample, len(sides))
		errs := make([]error, len(sides))
		for k := 0; k < *rounds && ctx.Err() == nil; k++ {
			for i, s := range sides {
				bar.Describe(fmt.Sprintf("n=%d %s", n, s.name))
				x, err := bench.MeasureStartup(bench.SystemMemory, bench.DefaultMemEvery, func(root func(int)) (bench.StartupTimes, error) { return s.launch(n, root) })
				switch {
				case err == nil:
					samples[i] = append(samples[i], x)
				case errs[i] == nil:
					errs[i] = err
				}
				step++
				bar.Set(step)
			}
		}
		if ctx.Err() != nil {
			break // interrupted: print the sizes done
		}
		var ref *bench.StartupSide
		if len(sides) > 1 {
			r := bench.StartupSideOf(samples[1], errs[1])
			ref = &r
		}
		rep.Rows = append(rep.Rows, bench.NewStartupRow(n, bench.StartupSideOf(samples[0], errs[0]), ref))
	}
	bar.Finish()
	if *asJSON {
		err = json.NewEncoder(os.Stdout).Encode(rep)
	} else {
		err = bench.WriteStartupTable(os.Stdout, rep)
	}
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "commtune bench startup: %v\n", err)
		return 1
	case ctx.Err() != nil:
		fmt.Fprintf(os.Stderr, "commtune bench startup: %v\n", ctx.Err())
		return 1
	case rep.Failed():
		fmt.Fprintln(os.Stderr, "commtune bench startup: some launches failed (see their rows)")
		return 1
	}
	return 0
}

// parseRankList parses -n's comma-separated job sizes.
func parseRankList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("%q: want job sizes from 1 to 1024 ranks, comma-separated", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// startupProcesses launches n ranks of bench-rank startup through
// commtune's launcher, as the other benchmarks start theirs, and returns
// the launch's times. The start goes to the ranks in
// bench.EnvStartupStart; the wall time ends when the launcher returns,
// every rank having exited.
func startupProcesses(ctx context.Context, n int, transport string, jobEnv []string) (bench.StartupTimes, error) {
	argv, err := launch.Self("bench-rank", "startup")
	if err != nil {
		return bench.StartupTimes{}, err
	}
	var line bench.StartupRank
	start := time.Now()
	env := append([]string{bench.EnvStartupStart + "=" + strconv.FormatInt(start.UnixNano(), 10)}, jobEnv...)
	err = benchProcesses(ctx, argv, n, 1, transport, env, func(int, int, string) {}, &line)
	wall := time.Since(start)
	if err != nil {
		return bench.StartupTimes{}, err
	}
	return line.Times(n, wall)
}

// startupRankMain is the hidden `commtune bench-rank startup`: one rank of
// the startup job.
func startupRankMain(args []string) int {
	fs := newFlagSet("bench-rank startup", "")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	// Read before joining: a rank without a start fails before the others
	// wait for it.
	start, err := bench.ParseStartupStart(os.Getenv(bench.EnvStartupStart))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	dense, err := bench.ParseStartupAlltoall(os.Getenv(bench.EnvStartupAlltoall))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return runRank(func(ctx context.Context, c *commtune.Comm, _ control.Endpoint) (any, error) {
		line, err := bench.Startup(ctx, c, start, dense)
		if c.Rank() != 0 || err != nil {
			return nil, err
		}
		return line, nil
	})
}
