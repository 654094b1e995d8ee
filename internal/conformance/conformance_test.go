package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/testenv"
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

// TestStressLocal runs the stress workload on 4 goroutine ranks; the full
// 200 000-message run over processes is TestStressProcesses.
func TestStressLocal(t *testing.T) {
	msgs := testenv.Pick(20000, 4000)
	if testing.Short() {
		msgs = 4000
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := commtune.Local(4, func(c *commtune.Comm) error {
		rep, err := Stress(ctx, c, StressConfig{Messages: msgs, MaxSize: 256 << 10, Seed: 42})
		if c.Rank() == 0 {
			t.Logf("rank 0: %+v", rep)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
