package conformance

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/commtune/commtune"
)

// TestDisagreeThenCompute: the rank that disagrees on a call where it
// only sent, and the rank it sent to, which only sent too, both go on
// computing (no call for longer than the rule's bound), and the evidence
// of the disagreement lies with them alone: rank 2 runs Reduce's chain
// (it sends to rank 1), ranks 0 and 1 the flat tree (rank 1 sends to the
// root, 0). The root waits for rank 2's message, which went to rank 1;
// it must still fail with ErrSizeMismatch within the bound — the idle
// rank answers its signature — and the idle ranks' next call must fail
// alike.
func TestDisagreeThenCompute(t *testing.T) {
	bound := ruleBound(3)
	arg := strconv.FormatInt(int64(bound), 10)
	t.Run("goroutines", func(t *testing.T) {
		t.Parallel()
		err := commtune.Local(3, func(c *commtune.Comm) error {
			return disagreeThenCompute(context.Background(), c, arg)
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	for _, tr := range Transports {
		t.Run(tr.Name, func(t *testing.T) {
			t.Parallel()
			out, err := runJob(t, 3, "disagreethencompute", arg, tr.Env)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Logf("\n%s", out)
		})
	}
}

// disagreeThenCompute is TestDisagreeThenCompute's rank program; arg is
// the bound in nanoseconds.
func disagreeThenCompute(ctx context.Context, c *commtune.Comm, arg string) error {
	ns, err := strconv.ParseInt(arg, 10, 64)
	if err != nil {
		return err
	}
	bound := time.Duration(ns)
	idle := 2*bound + time.Second
	alg := "reduce/flat/seg=none"
	if c.Rank() == 2 {
		alg = "reduce/chain/seg=none"
	}
	in, out := make([]float64, 4), make([]float64, 4)
	start := time.Now()
	err = commtune.Reduce(ctx, c, in, out, commtune.Sum, 0, commtune.WithAlgorithm(alg))
	took := time.Since(start)
	switch {
	case c.Rank() == 0 && !errors.Is(err, commtune.ErrSizeMismatch):
		return fmt.Errorf("rank 0, the root: %v after %v, want ErrSizeMismatch", err, took)
	case c.Rank() == 0 && took > bound:
		return fmt.Errorf("rank 0, the root: ErrSizeMismatch after %v, beyond the bound of %v (its peers computed)", took, bound)
	case c.Rank() == 0:
		fmt.Printf("rank 0: ErrSizeMismatch after %v\n", took.Round(time.Millisecond))
		time.Sleep(idle) // the others' next call must not find this rank gone
		return nil
	case err != nil:
		return nil // it saw the disagreement itself: allowed
	}
	time.Sleep(idle)
	if err := c.Barrier(ctx); !errors.Is(err, commtune.ErrSizeMismatch) {
		return fmt.Errorf("rank %d's next call after computing %v: %v, want ErrSizeMismatch", c.Rank(), idle, err)
	}
	return nil
}
