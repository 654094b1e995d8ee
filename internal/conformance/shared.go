package conformance

import (
	"context"
	"fmt"

	"github.com/commtune/commtune"
)

// shared: SplitShared on one node (every test job runs on one) gives all
// the ranks; each allocates a part of a shared region (rank 1's part is
// empty), writes it, and after a barrier reads every other rank's part
// where it lies, with no message.
func shared(ctx context.Context, c *commtune.Comm) error {
	node, err := c.SplitShared(ctx)
	if err != nil {
		return err
	}
	defer node.Close()
	if node.Size() != c.Size() || node.Rank() != c.Rank() {
		return fmt.Errorf("node communicator: rank %d of %d, want %d of %d", node.Rank(), node.Size(), c.Rank(), c.Size())
	}
	size := func(r int) int {
		if r == 1 {
			return 0
		}
		return 8 * (1000 + 37*r)
	}
	reg, err := node.AllocShared(ctx, size(node.Rank()))
	if err != nil {
		return err
	}
	defer reg.Close()
	mine := commtune.SharedPart[int64](reg, node.Rank())
	for i := range mine {
		mine[i] = int64(node.Rank()*1_000_000 + i)
	}
	if err := node.Barrier(ctx); err != nil {
		return err
	}
	for r := 0; r < node.Size(); r++ {
		p := commtune.SharedPart[int64](reg, r)
		if len(p)*8 != size(r) {
			return fmt.Errorf("rank %d's part: %d elements, want %d bytes", r, len(p), size(r))
		}
		for i, v := range p {
			if v != int64(r*1_000_000+i) {
				return fmt.Errorf("rank %d's part at %d: %d", r, i, v)
			}
		}
	}
	// Everyone has read before anyone unmaps (Close is not collective).
	return node.Barrier(ctx)
}
