package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/boot"
	"github.com/commtune/commtune/internal/launch"
	"github.com/commtune/commtune/internal/trace"
)

func init() {
	register(command{name: "run", summary: "start N ranks of a program on this node", run: runMain})
}

// runMain is `commtune run -n N [--nodes K] [--prefix] [--kill-grace 1s]
// [--keep-going] [--env K=V ...] -- prog args...` (docs/launcher.md). It
// exits 0 when every rank did (with --keep-going, every rank not lost),
// with the failing rank's status (128+signal for a signal) when one
// failed, 2 on a bad invocation and 1 on any other error.
func runMain(args []string) int {
	fs := newFlagSet("run", "-n N [--nodes K] [--prefix] [--kill-grace 1s] [--keep-going] [--env NAME=value ...] -- prog [args...]")
	n := fs.Int("n", 0, "number of ranks to start (required, at least 1)")
	nodes := fs.Int("nodes", 1, "split the ranks into this many pretend nodes: blocks of consecutive ranks, each on its share of the processors, reaching the other blocks over TCP as separate hosts would (to try a job of several nodes on one machine)")
	prefix := fs.Bool("prefix", false, `start each output line with "[rank] "`)
	grace := fs.Duration("kill-grace", launch.DefaultKillGrace,
		"after the first rank fails, how long the others may run before SIGTERM, and then before SIGKILL")
	keepGoing := fs.Bool("keep-going", false,
		"a rank that ends without saying goodbye (killed, crashed, exited before finalizing) is lost: the others are told and go on, and the job ends when every rank has exited")
	var env envFlag
	fs.Var(&env, "env", "set NAME=value in every rank's environment (repeatable)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	switch {
	case *n < 1:
		return usageError("run", "-n must be at least 1 (got %d)", *n)
	case *n > boot.MaxSize:
		return usageError("run", "-n must be at most %d (got %d)", boot.MaxSize, *n)
	case *nodes < 1 || *nodes > *n:
		return usageError("run", "--nodes must be from 1 to -n (got %d for %d ranks)", *nodes, *n)
	case fs.NArg() == 0:
		return usageError("run", "no program given: commtune run -n N -- prog [args...]")
	case *grace <= 0:
		return usageError("run", "--kill-grace must be positive (got %v)", *grace)
	}

	// Ranks run in their own process groups, so the terminal's Ctrl-C
	// reaches only us: pass it on.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	var jobID string
	err := launch.Run(context.Background(), launch.Options{
		OnJob:     func(id string) { jobID = id },
		N:         *n,
		Nodes:     *nodes,
		Args:      fs.Args(),
		Env:       env,
		Prefix:    *prefix,
		KillGrace: *grace,
		Signals:   sigs,
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		KeepGoing: *keepGoing,
		OnLost: func(e *launch.RankError) {
			fmt.Fprintf(os.Stderr, "commtune run: %v; the job goes on without it\n", e)
		},
	})
	if dir := traceDir(env); dir != "" && jobID != "" {
		mergeTimeline(dir, jobID, *n)
	}
	var re *launch.RankError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &re):
		fmt.Fprintf(os.Stderr, "commtune run: %v\n", re)
		return re.ExitStatus()
	}
	fmt.Fprintf(os.Stderr, "commtune run: %v\n", err)
	return 1
}

// traceDir is the COMMTUNE_TRACE the ranks get: --env's, else ours.
func traceDir(env []string) string {
	dir := os.Getenv(commtune.EnvTrace)
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, commtune.EnvTrace+"="); ok {
			dir = v
		}
	}
	return dir
}

// mergeTimeline joins the job's timeline files into one and says where it
// is; with ranks missing (a rank that failed before closing its world
// communicator writes none) it says which and merges nothing.
func mergeTimeline(dir, job string, n int) {
	var missing []int
	for r := range n {
		if _, err := os.Stat(filepath.Join(dir, trace.RankFileName(job, r))); err != nil {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "commtune run: timeline: ranks %v wrote no file in %s; `commtune trace merge %s` joins the others\n", missing, dir, dir)
		return
	}
	path, j, err := trace.MergeJob(dir, job, "")
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune run: timeline: %v\n", err)
		return
	}
	fmt.Fprintf(os.Stderr, "commtune run: timeline of %d ranks, %d calls: %s (Perfetto, chrome://tracing, or commtune report %s)\n",
		len(j.Ranks), j.SpanCount(), path, path)
}

// envFlag collects repeated --env NAME=value flags.
type envFlag []string

func (e *envFlag) String() string { return strings.Join(*e, " ") }

func (e *envFlag) Set(kv string) error {
	name, _, ok := strings.Cut(kv, "=")
	switch {
	case !ok || name == "":
		return fmt.Errorf("%q is not NAME=value", kv)
	case boot.IsLauncherVar(name):
		return fmt.Errorf("%s is set by the launcher for each rank", name)
	case name == boot.EnvKeepGoing:
		return fmt.Errorf("%s is set by the launcher for each rank: use --keep-going", name)
	}
	*e = append(*e, kv)
	return nil
}
