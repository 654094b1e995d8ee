package job

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/boot"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/core"
)

// reportingKV is a KV whose launcher reports ranks lost at once.
type reportingKV struct {
	boot.KV
	report  []int
	watched bool
}

func (k *reportingKV) WatchLosses(_ context.Context, lost func(int)) error {
	k.watched = true
	for _, r := range k.report {
		lost(r)
	}
	return nil
}

// TestWatchLosses: in a keep-going job the ranks the launcher reports
// become lost peers of the engine (ErrPeerLost wrapping boot.ErrRankLost),
// a report of the rank itself is ignored, and without keep-going nothing
// is watched.
func TestWatchLosses(t *testing.T) {
	defer func(d time.Duration) { reportDelay = d }(reportDelay)
	reportDelay = 0 // the delay is a timer's; the rule is what is tested
	for _, keep := range []bool{false, true} {
		ep, err := NewEndpoint(1, 4, config.Config{})
		if err != nil {
			t.Fatal(err)
		}
		kv := &reportingKV{report: []int{2, 1}}
		job := &boot.Job{Rank: 1, Size: 4, KV: kv, KeepGoing: keep}
		if err := watchLosses(context.Background(), ep, job); err != nil {
			t.Fatal(err)
		}
		if kv.watched != keep {
			t.Fatalf("keep-going %t: watched %t", keep, kv.watched)
		}
		lost := ep.Eng.Lost(2)
		var pl *core.PeerLostError
		switch {
		case !keep && lost != nil:
			t.Fatalf("rank 2 lost without keep-going: %v", lost)
		case keep && (!errors.As(lost, &pl) || pl.Rank != 2 || !errors.Is(lost, boot.ErrRankLost)):
			t.Fatalf("rank 2: Lost = %v, want ErrPeerLost naming it, wrapping boot.ErrRankLost", lost)
		}
		for _, r := range []int{0, 1, 3} {
			if err := ep.Eng.Lost(r); err != nil {
				t.Errorf("keep-going %t: rank %d lost: %v", keep, r, err)
			}
		}
	}
}

// TestWatchLossesDelayed: with the delay, the report still becomes the
// loss, later.
func TestWatchLossesDelayed(t *testing.T) {
	defer func(d time.Duration) { reportDelay = d }(reportDelay)
	reportDelay = 10 * time.Millisecond
	ep, err := NewEndpoint(0, 3, config.Config{})
	if err != nil {
		t.Fatal(err)
	}
	job := &boot.Job{Rank: 0, Size: 3, KV: &reportingKV{report: []int{1}}, KeepGoing: true}
	if err := watchLosses(context.Background(), ep, job); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ep.Eng.Lost(1) == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the report never became a loss")
		}
	}
}
