package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/testenv"
)

// twoRails joins ranks by two TCP rails (both loopback: 127.0.0.2 is lo's
// too) and splits every rendezvous message into equal chunks over them,
// which needs no sampled curves: each large message arrives in pieces on
// two connections.
var twoRails = []string{"COMMTUNE_TRANSPORTS=tcp", "COMMTUNE_RAILS=127.0.0.1,127.0.0.2", "COMMTUNE_SPLIT=iso"}

// TestTwoRails runs the semantics suite and the stress test over two
// rails with split messages, every byte checked (under the race detector,
// a tenth of the messages).
func TestTwoRails(t *testing.T) {
	n := countFromEnv(t, "COMMTUNE_STRESS_MESSAGES", testenv.Pick(20000, 2000), 4000)
	for _, job := range []struct {
		mode, arg string
		ranks     int
	}{
		{"suite", "", 2}, {"suite", "", 3}, {"stress", fmt.Sprint(n), 4},
	} {
		t.Run(fmt.Sprintf("%s/n=%d", job.mode, job.ranks), func(t *testing.T) {
			out, err := runJob(t, job.ranks, job.mode, job.arg, twoRails...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Logf("%s", out)
		})
	}
}

// TestRailLoss: rank 0 sends 32 MiB messages split over two rails and,
// part way, one of its rail connections breaks (its socket is shut down,
// as when a link goes). Both ranks must see ErrPeerLost, every message
// completed before must be intact, and nothing may be written into rank
// 1's receive buffer once its receive has failed.
func TestRailLoss(t *testing.T) {
	out, err := runJob(t, 2, "railloss", "", twoRails...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
	for _, want := range []string{"rank 0: lost the peer", "rank 1: lost the peer", "buffer untouched"} {
		if !strings.Contains(out, want) {
			t.Fatalf("no %q in:\n%s", want, out)
		}
	}
}

const (
	railLossSize  = 32 << 20
	railLossAfter = 3 // messages sent whole before a rail breaks
)

// railLoss is the ranks' side of TestRailLoss.
func railLoss(ctx context.Context, c *commtune.Comm, ep control.Endpoint) error {
	buf := make([]byte, railLossSize)
	if c.Rank() == 0 {
		for i := 0; ; i++ {
			if i == railLossAfter {
				// Both rails carried the intact messages: they were split.
				if b := ep.RailBytes(1); len(b) != 2 || b[0] < railLossSize || b[1] < railLossSize {
					return fmt.Errorf("bytes per rail %v after %d messages of %d: not split over two rails", b, i, railLossSize)
				}
				go func() {
					time.Sleep(2 * time.Millisecond) // into the next transfer
					if err := shutdownSocketsTo("127.0.0.2"); err != nil {
						fmt.Printf("rank 0: breaking the rail: %v\n", err)
					}
				}()
			}
			fillPayload(buf, 0, 1, i)
			if err := c.Send(ctx, buf, 1, 0); err != nil {
				if !errors.Is(err, commtune.ErrPeerLost) {
					return fmt.Errorf("send %d: %v, want ErrPeerLost", i, err)
				}
				if i < railLossAfter {
					return fmt.Errorf("send %d failed before the rail broke: %v", i, err)
				}
				fmt.Printf("rank 0: lost the peer at message %d: %v\n", i, err)
				return nil
			}
		}
	}
	want := make([]byte, railLossSize)
	for i := 0; ; i++ {
		_, err := c.Recv(ctx, buf, 0, 0)
		if err != nil {
			if !errors.Is(err, commtune.ErrPeerLost) {
				return fmt.Errorf("receive %d: %v, want ErrPeerLost", i, err)
			}
			if i < railLossAfter {
				return fmt.Errorf("receive %d failed before the rail broke: %v", i, err)
			}
			fmt.Printf("rank 1: lost the peer at message %d: %v\n", i, err)
			for j := range buf {
				buf[j] = 0xA5
			}
			time.Sleep(300 * time.Millisecond)
			for j, b := range buf {
				if b != 0xA5 {
					return fmt.Errorf("byte %d of the failed receive's buffer changed after the failure", j)
				}
			}
			fmt.Println("rank 1: buffer untouched after the failure")
			return nil
		}
		fillPayload(want, 0, 1, i)
		if !bytes.Equal(buf, want) {
			return fmt.Errorf("message %d arrived damaged", i)
		}
	}
}
