package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/testenv"
)

// closeSizes are the messages of a close-after-receive job: eager, then
// rendezvous, the last one large, so that the receiver's last receive is
// a rendezvous whose sender still waits to hear it is done.
var closeSizes = []int{8, 64 << 10, 1 << 20}

// closeAfterReceive: rank 0 sends closeSizes to rank 1, which closes as
// soon as its last receive returns. Every send must succeed: MPI_Finalize
// semantics, a receive that matched a send completes that send.
func closeAfterReceive(ctx context.Context, c *commtune.Comm) error {
	switch c.Rank() {
	case 0:
		for i, n := range closeSizes {
			b := make([]byte, n)
			fillPayload(b, 0, 1, i)
			if err := c.Send(ctx, b, 1, i); err != nil {
				return fmt.Errorf("send %d (%d bytes): %w", i, n, err)
			}
		}
	case 1:
		for i, n := range closeSizes {
			b := make([]byte, n)
			if _, err := c.Recv(ctx, b, 0, i); err != nil {
				return fmt.Errorf("receive %d (%d bytes): %w", i, n, err)
			}
		}
	}
	return nil // rankMain closes at once
}

// TestCloseAfterReceive runs many two-rank jobs in which the receiver
// closes right after its last receive, over every way a large message
// travels; the sender must never fail. COMMTUNE_CLOSE_JOBS sets the number
// of jobs, spread over the ways: default 1000, or 100 with -short or the
// race detector, whose jobs take 0.27 s each instead of 0.06 (CI runs
// both: 100 with the detector, 1000 without).
func TestCloseAfterReceive(t *testing.T) {
	def := 1000
	if testenv.Race {
		def = 100
	}
	jobs := countFromEnv(t, "COMMTUNE_CLOSE_JOBS", def, 100)
	ways := []struct {
		name string
		env  []string
	}{
		{"shm cma", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_METHOD=cma"}},
		{"shm copy", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_METHOD=copy"}},
		{"shm vmsplice", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_METHOD=vmsplice"}},
		{"shm cachefree", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_METHOD=cachefree"}},
		{"tcp", []string{"COMMTUNE_TRANSPORTS=tcp"}},
	}
	start := time.Now()
	failed := map[string]int{}
	for j := 0; j < jobs; j++ {
		w := ways[j%len(ways)]
		out, err := runJob(t, 2, "closeafter", "", w.env...)
		if err != nil {
			failed[w.name]++
			if failed[w.name] <= 3 {
				t.Errorf("job %d (%s): %v\n%s", j, w.name, err, out)
			}
		}
	}
	t.Logf("%d jobs in %v; failures by way: %v", jobs, time.Since(start).Round(time.Millisecond), failed)
}
