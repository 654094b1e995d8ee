package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/launch"
)

// twoRankBench runs a benchmark whose two ranks print the report: with
// inJob this process is one of them (an outside launcher started both);
// otherwise it starts both here, running `commtune` with selfArgs (which
// must include --in-job) and env, and their output is this command's.
// run, given the rank's communicator and endpoint, returns rank 0's report (nil on rank 1); asJSON prints it as JSON,
// else with table.
func twoRankBench[R any](name string, inJob, asJSON bool, selfArgs, env []string,
	run func(context.Context, *commtune.Comm, control.Endpoint) (*R, error), table func(io.Writer, *R) error) int {
	if inJob {
		return runRank(func(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (any, error) {
			rep, err := run(ctx, c, ep)
			if err != nil || rep == nil {
				return nil, err
			}
			if asJSON {
				return nil, json.NewEncoder(os.Stdout).Encode(rep)
			}
			return nil, table(os.Stdout, rep)
		})
	}
	if err := launchTwo(selfArgs, env); err != nil {
		fmt.Fprintf(os.Stderr, "commtune %s: %v\n", name, err)
		return 1
	}
	return 0
}

// launchTwo starts two ranks here, running `commtune` with selfArgs
// (which must include --in-job) and env, and waits for them; SIGINT and
// SIGTERM end them.
func launchTwo(selfArgs, env []string) error {
	argv, err := launch.Self(selfArgs...)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return launch.Run(ctx, launch.Options{N: 2, Args: argv, Env: env})
}
