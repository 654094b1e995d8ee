package sample

import (
	"context"
	"fmt"
	"testing"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/profile"
)

// TestNodeRunLocal runs a quick node pass on goroutine ranks: rank 0
// returns a valid curve per path with a point per size; the others none.
func TestNodeRunLocal(t *testing.T) {
	err := commtune.Local(3, func(c *commtune.Comm) error {
		curves, err := NodeRun(context.Background(), c, true, nil)
		if err != nil {
			return err
		}
		if c.Rank() != 0 {
			if curves != nil {
				return fmt.Errorf("rank %d returned curves", c.Rank())
			}
			return nil
		}
		for _, path := range []string{profile.NodeRing, profile.NodePull} {
			if got := len(curves[path]); got != len(NodeSizes(true)) {
				return fmt.Errorf("%s: %d points, want %d", path, got, len(NodeSizes(true)))
			}
		}
		tr := &profile.Transport{NodeCPUs: 2, Node: map[string]map[string]profile.Curve{"3": curves}}
		return (&profile.Profile{Version: profile.Version, Transports: map[string]*profile.Transport{"shm": tr}}).Validate()
	})
	if err != nil {
		t.Fatal(err)
	}
}
