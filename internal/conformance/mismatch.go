package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/commtune/commtune"
)

// mismatchBound is how soon every rank must return from a collective call
// whose ranks disagree on sizes, with no context deadline.
const mismatchBound = 2 * time.Second

// mismatchPatterns are collective calls whose ranks pass sizes that do not
// agree (MPI calls such programs erroneous). Each returns the call rank r
// makes.
var mismatchPatterns = []struct {
	name string
	call func(ctx context.Context, c *commtune.Comm) error
}{
	{"allreduce, rank 0 with 4 elements, the others 2", func(ctx context.Context, c *commtune.Comm) error {
		n := 2
		if c.Rank() == 0 {
			n = 4
		}
		return commtune.Allreduce(ctx, c, make([]int64, n), make([]int64, n), commtune.Sum)
	}},
	{"allreduce, rank 0 with 16 KiB, the others 32 B (other algorithms)", func(ctx context.Context, c *commtune.Comm) error {
		n := 32
		if c.Rank() == 0 {
			n = 16 << 10
		}
		return commtune.Allreduce(ctx, c, make([]byte, n), make([]byte, n), commtune.BOr)
	}},
	{"allgather, rank 1 one element short", func(ctx context.Context, c *commtune.Comm) error {
		n := 2
		if c.Rank() == 1 {
			n = 1
		}
		return commtune.Allgather(ctx, c, make([]int32, n), make([]int32, n*c.Size()))
	}},
	{"alltoall, rank 1 one element longer per block", func(ctx context.Context, c *commtune.Comm) error {
		n := 1
		if c.Rank() == 1 {
			n = 2
		}
		return commtune.Alltoall(ctx, c, make([]int32, n*c.Size()), make([]int32, n*c.Size()))
	}},
}

// MismatchChecks runs every mismatch pattern, each on a communicator of
// its own (a failed call leaves its communicator out of step), with no
// context deadline: every rank must return an error within mismatchBound.
// It returns, per pattern, what this rank saw.
func MismatchChecks(ctx context.Context, c *commtune.Comm) ([]string, error) {
	var report []string
	for _, p := range mismatchPatterns {
		d, err := c.Dup()
		if err != nil {
			return report, err
		}
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- p.call(context.Background(), d) }()
		select {
		case err = <-done:
		case <-time.After(mismatchBound + time.Second):
			return report, fmt.Errorf("%s: rank %d still blocked after %v", p.name, c.Rank(), time.Since(start).Round(time.Millisecond))
		}
		took := time.Since(start)
		if err == nil || took > mismatchBound {
			return report, fmt.Errorf("%s: rank %d returned %v after %v; want an error within %v", p.name, c.Rank(), err, took, mismatchBound)
		}
		report = append(report, fmt.Sprintf("%s: %s after %v", p.name, short1(err), took.Round(time.Millisecond)))
		if err := c.Barrier(ctx); err != nil {
			return report, err
		}
	}
	return report, nil
}

func mismatchCase(ctx context.Context, c *commtune.Comm) error {
	_, err := MismatchChecks(ctx, c)
	return err
}
