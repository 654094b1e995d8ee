package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/commtune/commtune"
)

// runRank is the body of a hidden rank command (one rank of a job a
// command starts of itself): it joins the job, runs fn, has rank 0 print
// fn's result as one JSON line for the command that started it, and
// leaves the job. It returns the exit status.
func runRank(fn func(ctx context.Context, c *commtune.Comm) (any, error)) int {
	ctx := context.Background()
	c, err := commtune.Init(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	res, err := fn(ctx, c)
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
