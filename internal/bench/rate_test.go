package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/control"
)

// TestRateLocal runs bench rate on goroutine ranks with tiny settings and
// checks the report's shape.
func TestRateLocal(t *testing.T) {
	cfg := RateConfig{Sizes: []int{8, 256}, Window: 8, Rounds: 1, Time: 10 * time.Millisecond}
	var rep *RateReport
	var tap control.Tap
	err := commtune.Local(2, func(c *commtune.Comm) error {
		r, err := Rate(context.Background(), c, tap.Of(c.Rank()), cfg)
		if c.Rank() == 0 {
			rep = r
		} else if r != nil {
			t.Errorf("rank 1 returned a report")
		}
		return err
	}, config.WithTap(&tap))
	if err != nil {
		t.Fatal(err)
	}
	if rep == nil || rep.Bench != "rate" || rep.Window != 8 || rep.Rounds != 1 || rep.Max != DefaultRateMax || rep.Transport == "" || len(rep.Rows) != 2 {
		t.Fatalf("report %+v", rep)
	}
	for i, row := range rep.Rows {
		if row.Bytes != cfg.Sizes[i] || row.DefaultMsgsPerSec <= 0 || row.AggregateMsgsPerSec <= 0 || row.Ratio <= 0 {
			t.Errorf("row %d: %+v", i, row)
		}
		// Default puts one message in a frame; aggregation at least one.
		if row.DefaultPerFrame != 1 || row.AggregatePerFrame < 1 {
			t.Errorf("row %d: messages per frame %v (default), %v (aggregate)", i, row.DefaultPerFrame, row.AggregatePerFrame)
		}
	}
}

// TestRatePattern checks that the receiver's check tells the messages of
// a window apart, so a reordering fails.
func TestRatePattern(t *testing.T) {
	for _, size := range []int{1, 8, 1024} {
		for i := 0; i < 300; i++ {
			b := make([]byte, size)
			ratePattern(b, i)
			if err := checkRate(b, i); err != nil {
				t.Fatalf("size %d, message %d: %v", size, i, err)
			}
			if i+1 < 300 {
				if err := checkRate(b, i+1); err == nil || !strings.Contains(err.Error(), "reordered") {
					t.Fatalf("size %d: message %d passed as %d (%v)", size, i, i+1, err)
				}
			}
		}
	}
}
