package proctest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/conformance"
)

// idleWait is how long the idle test's receiver waits.
const idleWait = 2 * time.Second

// idleRecv: rank 1 blocks in Recv while rank 0 sleeps; rank 1 reports the
// CPU time its whole process used meanwhile (getrusage: every thread).
func idleRecv(ctx context.Context, c *commtune.Comm) error {
	switch c.Rank() {
	case 0:
		time.Sleep(idleWait)
		return c.Send(ctx, []byte("wake up"), 1, 0)
	case 1:
		before, err := cpuTime()
		if err != nil {
			return err
		}
		t0 := time.Now()
		if _, err := c.Recv(ctx, make([]byte, 16), 0, 0); err != nil {
			return err
		}
		waited := time.Since(t0)
		after, err := cpuTime()
		if err != nil {
			return err
		}
		used := after - before
		fmt.Printf("rank 1: blocked in Recv %v, used %v of CPU (user+system, all threads)\n", waited.Round(time.Millisecond), used.Round(time.Microsecond))
		if used > 100*time.Millisecond {
			return fmt.Errorf("a rank blocked for %v used %v of CPU", waited, used)
		}
	}
	return nil
}

// TestIdleCost: a rank blocked in Recv for 2 s must sleep, not spin.
func TestIdleCost(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 2 s per transport")
	}
	for _, tr := range conformance.Transports {
		t.Run(tr.Name, func(t *testing.T) {
			out, err := conformance.RunJob(2, "idle", "", tr.Env)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Log(out)
		})
	}
}
