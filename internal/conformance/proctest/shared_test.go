package proctest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/conformance"
)

// sharedBytes is the part rank 0 writes for the others to read.
const sharedBytes = 64 << 20

// sharedRead: on the node communicator rank 0 writes 64 MiB into its part
// of a shared region; after a barrier every other rank reads all of it in
// place (a sum) and checks it, and reports the read's bandwidth beside a
// read of its own private memory and a copy() of it.
func sharedRead(ctx context.Context, c *commtune.Comm) error {
	node, err := c.SplitShared(ctx)
	if err != nil {
		return err
	}
	defer node.Close()
	size := 0
	if node.Rank() == 0 {
		size = sharedBytes
	}
	reg, err := node.AllocShared(ctx, size)
	if err != nil {
		return err
	}
	defer reg.Close()
	if node.Rank() == 0 {
		for i, p := 0, commtune.SharedPart[uint64](reg, 0); i < len(p); i++ {
			p[i] = uint64(i)
		}
	}
	if err := node.Barrier(ctx); err != nil {
		return err
	}
	if node.Rank() != 0 {
		words := sharedBytes / 8
		want := uint64(words) * uint64(words-1) / 2
		sum := func(p []uint64) uint64 {
			var s uint64
			for _, v := range p {
				s += v
			}
			return s
		}
		shared := commtune.SharedPart[uint64](reg, 0)
		private := make([]uint64, words)
		copy(private, shared)
		dst := make([]uint64, words)
		best := func(f func()) time.Duration {
			d := time.Duration(1 << 62)
			for i := 0; i < 5; i++ {
				t := time.Now()
				f()
				d = min(d, time.Since(t))
			}
			return d
		}
		var got uint64
		tShared := best(func() { got = sum(shared) })
		tPrivate := best(func() { sum(private) })
		tCopy := best(func() { copy(dst, private) })
		if got != want {
			return fmt.Errorf("rank %d read a sum of %d from the shared part, want %d", node.Rank(), got, want)
		}
		gbs := func(d time.Duration) float64 { return float64(sharedBytes) / d.Seconds() / 1e9 }
		fmt.Printf("rank %d: shared read %.2f GB/s, private read %.2f GB/s, copy() %.2f GB/s\n",
			node.Rank(), gbs(tShared), gbs(tPrivate), gbs(tCopy))
	}
	return node.Barrier(ctx)
}

// TestSharedRead runs sharedRead on 4 processes over each transport (the
// region does not depend on it) and logs the bandwidths; the readers'
// sums are the check.
func TestSharedRead(t *testing.T) {
	for _, tr := range conformance.Transports {
		t.Run(tr.Name, func(t *testing.T) {
			out, err := conformance.RunJob(4, "sharedread", "", tr.Env)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if n := strings.Count(out, "shared read"); n != 3 {
				t.Fatalf("%d readers reported, want 3:\n%s", n, out)
			}
			t.Logf("%s", out)
		})
	}
}
