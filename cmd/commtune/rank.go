package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/control"
)

// runRank is the body of a hidden rank command (one rank of a job a
// command starts of itself): it joins the job, runs fn with the rank's
// communicator and the endpoint behind it, has rank 0 print
// fn's result as one JSON line for the command that started it, and
// leaves the job. It returns the exit status.
func runRank(fn func(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (any, error)) int {
	ctx := context.Background()
	var tap control.Tap
	c, err := commtune.Init(ctx, config.WithTap(&tap))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stop, err := startProfiles(c.Rank())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	res, err := fn(ctx, c, tap.Of(c.Rank()))
	stop()
	if err == nil && c.Rank() == 0 && res != nil {
		err = json.NewEncoder(os.Stdout).Encode(res)
	}
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: %v\n", c.Rank(), err)
		return 1
	}
	return 0
}

// Benchmark ranks write a CPU profile and an execution trace each when
// these name a file prefix: PREFIX.rankN (see README, "Finding where the
// time goes").
const (
	envCPUProfile = "COMMTUNE_BENCH_CPUPROFILE"
	envTrace      = "COMMTUNE_BENCH_TRACE"
)

// startProfiles starts what envCPUProfile and envTrace ask for on rank me
// and returns the function that stops and writes them.
func startProfiles(me int) (func(), error) {
	var stops []func()
	stop := func() {
		for _, f := range stops {
			f()
		}
	}
	open := func(env string) (*os.File, error) {
		prefix := os.Getenv(env)
		if prefix == "" {
			return nil, nil
		}
		f, err := os.Create(fmt.Sprintf("%s.rank%d", prefix, me))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", env, err)
		}
		return f, nil
	}
	if f, err := open(envCPUProfile); err != nil {
		return stop, err
	} else if f != nil {
		if err := pprof.StartCPUProfile(f); err != nil {
			return stop, fmt.Errorf("%s: %w", envCPUProfile, err)
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if f, err := open(envTrace); err != nil {
		stop()
		return func() {}, err
	} else if f != nil {
		if err := trace.Start(f); err != nil {
			stop()
			return func() {}, fmt.Errorf("%s: %w", envTrace, err)
		}
		stops = append(stops, func() { trace.Stop(); f.Close() })
	}
	return stop, nil
}
