package comm

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/core"
)

// allreduceF64 runs a sum Allreduce of v in place with options o.
func allreduceF64(ctx context.Context, c *Comm, v []byte, o Options) error {
	sum, err := coll.Kernel(coll.OpSum, reflect.Float64)
	if err != nil {
		return err
	}
	k, err := c.Prepare(coll.OpAllreduce, coll.Layout{Bytes: len(v), Elem: 8}, v, v, sum, true, o)
	if err != nil {
		return err
	}
	return k.Run(ctx, true)
}

// TestTeamChoice: goroutine ranks run the direct algorithm by the table,
// and ranks apart refuse it when it is asked for, saying why.
func TestTeamChoice(t *testing.T) {
	run(t, 3, func(c *Comm) error {
		var ch Choice
		if err := allreduceF64(context.Background(), c, make([]byte, 64), Options{Choice: func(got Choice) { ch = got }}); err != nil {
			return err
		}
		if ch.Algorithm != "allreduce/direct" || ch.By != ChosenByTable {
			return fmt.Errorf("goroutine ranks ran %s chosen by %s, want allreduce/direct by the table", ch.Algorithm, ch.By)
		}
		return nil
	})
	runApart(t, 2, func(c *Comm) error {
		err := allreduceF64(context.Background(), c, make([]byte, 64), Options{Algorithm: "direct"})
		if err == nil || !strings.Contains(err.Error(), "goroutine ranks") {
			return fmt.Errorf("direct forced on ranks apart: %v, want an error saying it needs goroutine ranks", err)
		}
		return nil
	})
}

// TestTeamMismatch: ranks that disagree on a call's size all fail it with
// ErrSizeMismatch, naming both calls, and the team meets again after.
func TestTeamMismatch(t *testing.T) {
	for _, n := range []int{8, 4096} { // inline, and read in place
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			run(t, 3, func(c *Comm) error {
				ctx := context.Background()
				v := make([]byte, n+8*c.Rank())
				err := allreduceF64(ctx, c, v, Options{})
				if !errors.Is(err, core.ErrSizeMismatch) || !strings.Contains(err.Error(), "allreduce of") {
					return fmt.Errorf("sizes differ: %v, want ErrSizeMismatch naming the calls", err)
				}
				return allreduceF64(ctx, c, make([]byte, n), Options{})
			})
		})
	}
}

// TestTeamLostPeer: a rank that leaves while the others wait for it in a
// collective call ends their wait with an error instead of a hang, and a
// context ending on one rank ends the call on every rank.
func TestTeamLostPeer(t *testing.T) {
	run(t, 3, func(c *Comm) error {
		if c.Rank() == 2 {
			return nil // leaves: its endpoint closes
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := allreduceF64(ctx, c, make([]byte, 4096), Options{})
		if err == nil || ctx.Err() != nil {
			return fmt.Errorf("allreduce without rank 2: %v (context: %v), want an error before the deadline", err, ctx.Err())
		}
		return nil
	})
	run(t, 3, func(c *Comm) error {
		ctx := context.Background()
		if c.Rank() == 0 {
			short, cancel := context.WithCancel(ctx)
			cancel()
			ctx = short
		}
		err := allreduceF64(ctx, c, make([]byte, 4096), Options{})
		if err == nil {
			return fmt.Errorf("rank %d: allreduce with rank 0's context ended: no error", c.Rank())
		}
		return nil
	})
}
