package shmtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/testenv"
)

// crossingExchange has every rank send the next one a message larger
// than a ring while receiving one from the previous, again and again:
// each rank's writer then waits for room in a ring its peer drains, with
// both consumers asleep while the ranks poll. A watchdog fails the rank
// rather than let the job hang.
func crossingExchange(ctx context.Context, c *commtune.Comm) error {
	const size, rounds = 4 << 20, 300
	watchdog := time.AfterFunc(time.Minute, func() {
		fmt.Printf("rank %d: FAIL: %d-byte exchanges still running after a minute\n", c.Rank(), size)
		os.Exit(3)
	})
	defer watchdog.Stop()
	n := c.Size()
	next, prev := (c.Rank()+1)%n, (c.Rank()+n-1)%n
	out, in := make([]byte, size), make([]byte, size)
	for i := range rounds {
		if i%50 == 0 { // filling 4 MiB every round took most of the time under the race detector
			conformance.FillPayload(out, c.Rank(), next, i)
		}
		if _, err := c.Sendrecv(ctx, out, next, 1, in, prev, 1); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		if i%50 == 0 {
			want := make([]byte, size)
			conformance.FillPayload(want, prev, c.Rank(), i)
			if !bytes.Equal(in, want) {
				return fmt.Errorf("round %d: wrong bytes", i)
			}
		}
	}
	return nil
}

// TestShmCrossing: ranks on a ring each send the next 4 MiB (twice a
// ring) while receiving as much, over every shared-memory method, on 2
// and 3 ranks (under the race detector, 3); a rank waiting for ring room
// must take in what its own rings hold, or the ranks wait for each other
// forever.
func TestShmCrossing(t *testing.T) {
	for _, m := range []string{"copy", "cachefree", "vmsplice", "cma"} {
		for _, n := range testenv.Pick([]int{2, 3}, []int{3}) {
			t.Run(fmt.Sprintf("%s/n=%d", m, n), func(t *testing.T) {
				out, err := conformance.RunJob(n, "crossing", "", "COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_METHOD="+m)
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			})
		}
	}
}
