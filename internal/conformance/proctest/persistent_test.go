package proctest

import (
	"context"
	"fmt"
	"testing"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/conformance"
)

// persistentCase runs the conformance case "persistent" alone.
func persistentCase(ctx context.Context, c *commtune.Comm) error {
	tc, _ := conformance.Lookup("persistent")
	return tc.Run(ctx, c)
}

// TestPersistentAcrossNodes runs the persistent requests' case on ranks
// of two pretend nodes (shared memory within each, TCP between them),
// where the small collectives' inits fix the hierarchical algorithms:
// their starts run the node and leader phases in goroutines of their own.
func TestPersistentAcrossNodes(t *testing.T) {
	for _, n := range []int{4, 5} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			out, err := conformance.RunJobNodes(n, 2, 0, "persistent", "", "COMMTUNE_TRANSPORTS=shm,tcp")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}
