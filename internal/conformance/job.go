package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/launch"
)

// A test binary of this package or of its sibling test packages doubles as
// the rank program of the jobs its tests start: RunJob starts the binary
// itself through the launcher with RankModeEnv naming a Program, and
// RankMain, called first in TestMain, runs that Program instead of the
// tests.

// The variables by which a job tells the test binary it starts which
// Program to run, and with what argument. They are the tests' own, not
// the library's, hence no COMMTUNE_ prefix (as internal/launch's test
// helper's LAUNCH_TEST_HELPER).
const (
	RankModeEnv = "CONFORMANCE_TEST_PROGRAM"
	RankArgEnv  = "CONFORMANCE_TEST_ARG"
)

// A Program is what every rank of a test job runs on the world
// communicator, given the endpoint behind it and the job's argument. What
// it has to say goes to stdout as "rank R: ..." lines; an error fails the
// rank.
type Program func(ctx context.Context, c *commtune.Comm, ep control.Endpoint, arg string) error

// Plain makes a Program of f, which takes no argument and looks at no
// endpoint.
func Plain(f func(context.Context, *commtune.Comm) error) Program {
	return func(ctx context.Context, c *commtune.Comm, _ control.Endpoint, _ string) error { return f(ctx, c) }
}

// WithArg makes a Program of f, which takes the job's argument and looks
// at no endpoint.
func WithArg(f func(ctx context.Context, c *commtune.Comm, arg string) error) Program {
	return func(ctx context.Context, c *commtune.Comm, _ control.Endpoint, arg string) error {
		return f(ctx, c, arg)
	}
}

// Inside makes a Program of f, which looks at the endpoint.
func Inside(f func(context.Context, *commtune.Comm, control.Endpoint) error) Program {
	return func(ctx context.Context, c *commtune.Comm, ep control.Endpoint, _ string) error { return f(ctx, c, ep) }
}

// Programs returns the programs that more than one test package runs, by
// name: "suite" runs every case of Cases whose name starts with one of
// the comma-separated prefixes of its argument (every case for ""), "stress" runs Stress with as many
// messages as its argument says. A test binary adds its own before
// handing the map to RankMain.
func Programs() map[string]Program {
	return map[string]Program{
		"suite": func(ctx context.Context, c *commtune.Comm, _ control.Endpoint, arg string) error {
			return runSuite(ctx, c, arg)
		},
		"stress": func(ctx context.Context, c *commtune.Comm, _ control.Endpoint, arg string) error {
			n, _ := strconv.Atoi(arg)
			rep, err := Stress(ctx, c, StressConfig{Messages: n, MaxSize: 256 << 10, Seed: 2026})
			fmt.Printf("rank %d: stress sent %d received %d (%d bytes) in %v\n", c.Rank(), rep.Sent, rep.Received, rep.BytesReceived, rep.Elapsed.Round(time.Millisecond))
			return err
		},
	}
}

// runSuite runs every case whose name starts with one of prefixes
// (comma-separated; "" for every case) on the world communicator, with a
// barrier between cases so that one case's stragglers cannot meet the
// next, and says how many passed.
func runSuite(ctx context.Context, c *commtune.Comm, prefixes string) error {
	passed := 0
	wanted := func(name string) bool {
		for _, p := range strings.Split(prefixes, ",") {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	for _, tc := range Cases() {
		if c.Size() < tc.MinRanks || !wanted(tc.Name) {
			continue
		}
		if err := tc.Run(ctx, c); err != nil {
			return fmt.Errorf("%s: %w", tc.Name, err)
		}
		if err := c.Barrier(ctx); err != nil {
			return fmt.Errorf("%s: barrier: %w", tc.Name, err)
		}
		passed++
	}
	fmt.Printf("rank %d: suite: %d cases passed\n", c.Rank(), passed)
	return nil
}

// RankMain returns at once unless RankModeEnv is set. If it is, this
// process is a rank of a job RunJob started: RankMain runs the program of
// that name among programs (commtune.Init over the launcher's
// environment), then exits, with status 0 only if the program and Close
// succeeded.
func RankMain(programs map[string]Program) {
	mode := os.Getenv(RankModeEnv)
	if mode == "" {
		return
	}
	os.Exit(runRank(programs, mode, os.Getenv(RankArgEnv)))
}

func runRank(programs map[string]Program, mode, arg string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var tap control.Tap
	c, err := commtune.Init(ctx, config.WithTap(&tap))
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		return 1
	}
	if p, ok := programs[mode]; ok {
		err = p(ctx, c, tap.Of(c.Rank()), arg)
	} else {
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Printf("rank %d: FAIL: %v\n", c.Rank(), err)
		c.Close()
		return 1
	}
	if err := c.Close(); err != nil {
		fmt.Printf("rank %d: close: %v\n", c.Rank(), err)
		return 1
	}
	return 0
}

// RunJob starts n ranks of the running test binary through the launcher,
// each running the program mode with arg (RankMain), with env added to
// their environment, and returns their output, each line prefixed with
// its rank.
func RunJob(n int, mode, arg string, env ...string) (string, error) {
	return RunJobGrace(n, 0, mode, arg, env...)
}

// RunJobGrace is RunJob with the launcher's kill grace (0: its default):
// how long the other ranks may run after one fails.
func RunJobGrace(n int, grace time.Duration, mode, arg string, env ...string) (string, error) {
	return launchJob(n, 1, grace, mode, arg, env, nil)
}

// RunJobKeepGoing is RunJob with the launcher's KeepGoing: a rank lost
// leaves the others running. It also returns the losses the launcher
// reported (launch.Options.OnLost).
func RunJobKeepGoing(n int, mode, arg string, env ...string) (string, []launch.RankError, error) {
	var lost []launch.RankError
	out, err := launchJob(n, 1, 0, mode, arg, env, func(e *launch.RankError) { lost = append(lost, *e) })
	return out, lost, err
}

// RunJobNodes is RunJobGrace on pretend nodes (launch.Options.Nodes):
// the ranks in nodes blocks that reach each other over TCP, shared memory
// within each.
func RunJobNodes(n, nodes int, grace time.Duration, mode, arg string, env ...string) (string, error) {
	return launchJob(n, nodes, grace, mode, arg, env, nil)
}

// launchJob runs the job; onLost, when not nil, makes it keep going.
func launchJob(n, nodes int, grace time.Duration, mode, arg string, env []string, onLost func(*launch.RankError)) (string, error) {
	var out bytes.Buffer
	err := launch.Run(context.Background(), launch.Options{
		N:     n,
		Nodes: nodes,
		Args:  []string{os.Args[0]},
		Env: append([]string{
			RankModeEnv + "=" + mode, RankArgEnv + "=" + arg,
			// A race-enabled binary sleeps a second at exit unless told not to.
			"GORACE=atexit_sleep_ms=0",
			// The suite checks protocols by their defaults, not by this
			// machine's tuning profile, nor by what earlier jobs here
			// learned (the lottery starts cold in every job).
			"COMMTUNE_PROFILE=off", "COMMTUNE_TUNE_STATE=off",
		}, env...),
		KillGrace: grace,
		KeepGoing: onLost != nil,
		OnLost:    onLost,
		Prefix:    true,
		Stdout:    &out,
		Stderr:    &out,
	})
	return out.String(), err
}

// A Transport is a way the ranks of a test job reach each other: Env is
// the setting that selects it.
type Transport struct {
	Name, Env string
}

// Transports are the ways most process tests connect their ranks: every
// rank through TCP, or shared memory between the ranks of this node.
var Transports = []Transport{
	{"tcp", "COMMTUNE_TRANSPORTS=tcp"},
	{"shm", "COMMTUNE_TRANSPORTS=shm,tcp"},
}

// CountFromEnv returns the positive count the environment variable name
// sets, else def, or short with -short.
func CountFromEnv(t testing.TB, name string, def, short int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if testing.Short() {
			return short
		}
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive count", name, v)
	}
	return n
}
