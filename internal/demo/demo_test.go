package demo

import (
	"testing"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/control"
)

// TestRunLocal runs the program on four goroutine ranks: every operation
// is measured and every allreduce checks out (Run verifies the sums).
func TestRunLocal(t *testing.T) {
	cfg := Config{PingPong: []int64{1, 4096, 100000}, Allreduce: []int64{8, 8 * 1000, 8 * 100003}}
	var res []Result
	var probe float64
	var tap control.Tap
	err := commtune.Local(4, func(c *commtune.Comm) error {
		r, err := Run(t.Context(), c, tap.Of(c.Rank()), cfg)
		if c.Rank() == 0 && r != nil {
			res, probe = r.Results, r.Probe
		}
		return err
	}, config.WithTap(&tap))
	if err != nil {
		t.Fatal(err)
	}
	if probe <= 0 {
		t.Errorf("no state probe: %v", probe)
	}
	if len(res) != 6 {
		t.Fatalf("%d results: %+v", len(res), res)
	}
	for i, r := range res {
		op, n := "pingpong", cfg.PingPong[min(i, 2)]
		if i >= 3 {
			op, n = "allreduce", cfg.Allreduce[i-3]
		}
		if r.Op != op || r.Bytes != n || r.NS <= 0 || r.Reps < 12 {
			t.Errorf("result %d: %+v", i, r)
		}
	}
}
