// Package exampletest runs an example program as a job of processes from
// the example's own tests: the test binary, whose package is the
// example's main, starts itself through the launcher, and RankMain,
// called first in TestMain, runs the example's main instead of the tests.
package exampletest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"syscall"
	"testing"

	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/launch"
)

// rankEnv tells a test binary started by Job that it is a rank. It is the
// tests' own variable, not the library's, hence no COMMTUNE_ prefix.
const rankEnv = "EXAMPLE_TEST_RANK"

// RunsEnv sets how many times a test repeats each job (default 1): the
// acceptance run asks for many, to catch recoveries that fail now and
// then.
const RunsEnv = "COMMTUNE_EXAMPLE_RUNS"

// RankMain returns at once unless this process is a rank of a job Job
// started; then it runs main (the example's, which parses the job's
// arguments and exits non-zero on failure) and exits 0. A rank the
// launcher ends with SIGTERM — one still waiting when the others are
// done — prints every goroutine's stack first, to show where it waits.
func RankMain(main func()) {
	if os.Getenv(rankEnv) == "" {
		return
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		<-term
		fmt.Fprintln(os.Stderr, "ended by the launcher while still running; goroutines:")
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		os.Exit(3)
	}()
	main()
	os.Exit(0)
}

// Runs returns how many times each job runs: RunsEnv, default 1.
func Runs(t testing.TB) int {
	t.Helper()
	return conformance.CountFromEnv(t, RunsEnv, 1, 1)
}

// Job runs n ranks of the test binary with the example's arguments args
// and the extra environment env, as `commtune run --keep-going` does: a
// rank that dies leaves the others running. It returns their output, each
// line prefixed with "[rank] ", the ranks the launcher reported lost, in
// the order it did, and its error (nil when every rank not lost exited 0).
func Job(n int, args []string, env ...string) (string, []launch.RankError, error) {
	var out bytes.Buffer
	var lost []launch.RankError
	err := launch.Run(context.Background(), launch.Options{
		N:    n,
		Args: append([]string{os.Args[0]}, args...),
		Env: append([]string{
			rankEnv + "=1",
			// A race-enabled binary sleeps a second at exit unless told not to.
			"GORACE=atexit_sleep_ms=0",
			// Defaults, not this machine's tuning nor earlier jobs' learning.
			"COMMTUNE_PROFILE=off", "COMMTUNE_TUNE_STATE=off",
		}, env...),
		KeepGoing: true,
		OnLost:    func(e *launch.RankError) { lost = append(lost, *e) },
		Prefix:    true,
		Stdout:    &out,
		Stderr:    &out,
	})
	return out.String(), lost, err
}

// CheckLost returns an error unless lost are exactly victims (in any
// order), each killed by SIGKILL.
func CheckLost(lost []launch.RankError, victims []int) error {
	var got []int
	for _, e := range lost {
		if e.Signal != syscall.SIGKILL {
			return fmt.Errorf("rank %d lost: %v, want killed by SIGKILL", e.Rank, &e)
		}
		got = append(got, e.Rank)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(victims))
	if !slices.Equal(got, want) {
		return fmt.Errorf("launcher reported ranks %v lost, want %v", got, want)
	}
	return nil
}
