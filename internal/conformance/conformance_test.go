package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/commtune/commtune"
)

// TestLocal runs the suite on goroutine ranks (the in-process driver).
func TestLocal(t *testing.T) {
	for _, tc := range Cases() {
		for _, n := range []int{1, 2, 3, 4} {
			if n < tc.MinRanks {
				continue
			}
			t.Run(fmt.Sprintf("%s/n=%d", tc.Name, n), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				if err := commtune.Local(n, func(c *commtune.Comm) error { return tc.Run(ctx, c) }); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
