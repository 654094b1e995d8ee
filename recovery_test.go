package commtune_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/control"
)

// TestRevokeEndsPendingCalls: a revocation by one rank ends the calls the
// others wait in — a receive nobody answers, a collective a rank never
// joins — with ErrRevoked; later calls fail too, and Agree still works.
func TestRevokeEndsPendingCalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const n = 4
	err := commtune.Local(n, func(c *commtune.Comm) error {
		var err error
		switch c.Rank() {
		case 0:
			time.Sleep(20 * time.Millisecond)
			err = c.Revoke()
		case 1:
			_, err = c.Recv(ctx, make([]byte, 8), 3, 7)
		case 2:
			_, err = c.Recv(ctx, make([]byte, 8), commtune.AnySource, 7)
		case 3:
			err = c.Barrier(ctx) // rank 0 never joins
		}
		if c.Rank() != 0 && !errors.Is(err, commtune.ErrRevoked) {
			return fmt.Errorf("pending call: %v, want ErrRevoked", err)
		}
		if c.Rank() == 0 && err != nil {
			return err
		}
		if !c.Revoked() {
			return fmt.Errorf("Revoked() false after the revocation")
		}
		if err := c.Send(ctx, []byte{1}, (c.Rank()+1)%n, 0); !errors.Is(err, commtune.ErrRevoked) {
			return fmt.Errorf("Send after the revocation: %v, want ErrRevoked", err)
		}
		if err := c.Barrier(ctx); !errors.Is(err, commtune.ErrRevoked) {
			return fmt.Errorf("Barrier after the revocation: %v, want ErrRevoked", err)
		}
		v, err := c.Agree(ctx, ^uint64(0)&^(1<<c.Rank()))
		if err != nil || v != ^uint64(0)&^0xF {
			return fmt.Errorf("Agree on the revoked communicator: %#x, %v; want %#x", v, err, ^uint64(0)&^0xF)
		}
		d, err := c.Shrink(ctx)
		if err != nil || d.Size() != n || d.Revoked() {
			return fmt.Errorf("Shrink with nobody lost: size %d revoked %t, %v", d.Size(), d.Revoked(), err)
		}
		var sum [1]int64
		if err := commtune.Allreduce(ctx, d, []int64{int64(c.Rank())}, sum[:], commtune.Sum); err != nil || sum[0] != 6 {
			return fmt.Errorf("Allreduce on the shrunk communicator: %d, %v", sum[0], err)
		}
		return d.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCrashThenShrink: goroutine ranks crash in the middle of collective
// loops; every survivor's call fails, it revokes, shrinks and agrees, and
// all survivors get the same communicator, of the survivors, which runs
// collectives.
func TestCrashThenShrink(t *testing.T) {
	cases := []struct {
		n       int
		victims []int
		size    int // Allreduce bytes
	}{
		{4, []int{2}, 8},
		{4, []int{1, 3}, 64 << 10},
		{8, []int{2}, 1 << 20},
		{8, []int{0, 5}, 8},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("n=%d/victims=%v/%dB", tc.n, tc.victims, tc.size), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			var tap control.Tap
			var mu sync.Mutex
			finals := map[int][]int{}
			err := commtune.Local(tc.n, func(c *commtune.Comm) error {
				victim := slices.Contains(tc.victims, c.Rank())
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				if victim {
					go func() {
						time.Sleep(5 * time.Millisecond)
						tap.Of(c.Rank()).Crash(errors.New("killed by the test"))
					}()
				}
				send, recv := make([]float64, tc.size/8), make([]float64, tc.size/8)
				var err error
				for err == nil {
					err = commtune.Allreduce(ctx, c, send, recv, commtune.Sum)
				}
				if victim {
					return nil
				}
				if !errors.Is(err, commtune.ErrPeerLost) && !errors.Is(err, commtune.ErrRevoked) {
					return fmt.Errorf("loop ended with %v, want ErrPeerLost or ErrRevoked", err)
				}
				if err := c.Revoke(); err != nil {
					return err
				}
				cur := c
				for attempt := 0; ; attempt++ {
					if attempt > 10 {
						return fmt.Errorf("no stable communicator after %d shrinks", attempt)
					}
					d, err := cur.Shrink(ctx)
					if err != nil {
						return err
					}
					var sum [1]int64
					ok := uint64(1)
					if err := commtune.Allreduce(ctx, d, []int64{int64(c.Rank())}, sum[:], commtune.Sum); err != nil {
						ok = 0
					}
					v, err := d.Agree(ctx, ok)
					if err == nil && v == 1 {
						var members []int
						for r := range d.Size() {
							members = append(members, d.WorldRank(r))
						}
						mu.Lock()
						finals[c.Rank()] = members
						mu.Unlock()
						return nil
					}
					d.Revoke()
					cur = d
				}
			}, config.WithTap(&tap))
			if err != nil && !errors.Is(err, commtune.ErrClosed) {
				t.Logf("Local: %v", err)
			}
			var want []int
			for r := range tc.n {
				if !slices.Contains(tc.victims, r) {
					want = append(want, r)
				}
			}
			for _, r := range want {
				if !slices.Equal(finals[r], want) {
					t.Errorf("rank %d ended with members %v, want %v", r, finals[r], want)
				}
			}
		})
	}
}

// TestAckFailed: after a crash, an any-source receive fails until the
// rank acknowledges the loss; then it works, and Agree no longer reports
// the acknowledged rank (before, it names it, the same on every survivor).
func TestAckFailed(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const n, victim = 4, 3
	var tap control.Tap
	err := commtune.Local(n, func(c *commtune.Comm) error {
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == victim {
			tap.Of(victim).Crash(errors.New("killed by the test"))
			return nil
		}
		for {
			failed, err := c.FailedRanks()
			if err != nil {
				return err
			}
			if slices.Equal(failed, []int{victim}) {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("FailedRanks never named rank %d: %v", victim, failed)
			}
			time.Sleep(time.Millisecond)
		}
		if _, err := c.Recv(ctx, make([]byte, 1), commtune.AnySource, 0); !errors.Is(err, commtune.ErrPeerLost) {
			return fmt.Errorf("any-source receive before AckFailed: %v, want ErrPeerLost", err)
		}
		var fe *commtune.FailedRanksError
		if _, err := c.Agree(ctx, 1); !errors.As(err, &fe) || !slices.Equal(fe.Ranks, []int{victim}) {
			return fmt.Errorf("Agree before AckFailed: %v, want ranks [%d] failed", err, victim)
		}
		acked, err := c.AckFailed()
		if err != nil || !slices.Equal(acked, []int{victim}) {
			return fmt.Errorf("AckFailed: %v, %v", acked, err)
		}
		// A ring among the survivors through any-source receives.
		next, prev := (c.Rank()+1)%victim, (c.Rank()+victim-1)%victim
		got := make([]byte, 1)
		st, err := c.Sendrecv(ctx, []byte{byte(c.Rank())}, next, 5, got, commtune.AnySource, 5)
		if err != nil || st.Source != prev || got[0] != byte(prev) {
			return fmt.Errorf("any-source receive after AckFailed: from %d (%d), %v; want from %d", st.Source, got[0], err, prev)
		}
		if v, err := c.Agree(ctx, 1); err != nil || v != 1 {
			return fmt.Errorf("Agree after AckFailed: %d, %v", v, err)
		}
		return nil
	}, config.WithTap(&tap))
	if err != nil && !errors.Is(err, commtune.ErrClosed) {
		t.Fatal(err)
	}
}
