package commtune

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/coll"
)

func withLottery(c *Config) { c.CollSelect = CollSelectLottery }

// withTable selects by the fixed table whatever COMMTUNE_COLL_SELECT says:
// options apply after the environment.
func withTable(c *Config) { c.CollSelect = CollSelectTable }

// withMessages has Bcast and Barrier pass messages on goroutine ranks too
// (forced, as the table would choose between processes).
func withMessages(c *Config) {
	withTable(c)
	c.Collectives = map[string]string{"bcast": "binomial", "barrier": "dissemination"}
}

// TestLotteryCollectives runs every selectable operation many times with
// the lottery choosing, and checks each call's result: whatever it draws,
// every rank runs the same algorithm and gets the right answer.
func TestLotteryCollectives(t *testing.T) {
	const calls = 40
	ctx := context.Background()
	for _, n := range []int{2, 3, 4} {
		for _, size := range []int{1, 128, 8 << 10} {
			t.Run(fmt.Sprintf("ranks=%d/elems=%d", n, size), func(t *testing.T) {
				err := Local(n, func(c *Comm) error {
					r := c.Rank()
					for i := range calls {
						if err := c.Barrier(ctx); err != nil {
							return fmt.Errorf("barrier: %w", err)
						}
						buf := make([]int64, size)
						if r == i%n {
							for j := range buf {
								buf[j] = int64(i + j)
							}
						}
						if err := Bcast(ctx, c, buf, i%n); err != nil {
							return fmt.Errorf("bcast: %w", err)
						}
						if buf[size-1] != int64(i+size-1) {
							return fmt.Errorf("bcast call %d: got %d", i, buf[size-1])
						}
						send := make([]int64, size)
						for j := range send {
							send[j] = int64(r + j)
						}
						sum := make([]int64, size)
						if err := Allreduce(ctx, c, send, sum, Sum); err != nil {
							return fmt.Errorf("allreduce: %w", err)
						}
						if want := int64(n*(n-1)/2 + n*(size-1)); sum[size-1] != want {
							return fmt.Errorf("allreduce call %d: got %d, want %d", i, sum[size-1], want)
						}
						if err := Reduce(ctx, c, send, sum, Max, 0); err != nil {
							return fmt.Errorf("reduce: %w", err)
						}
						if r == 0 && sum[0] != int64(n-1) {
							return fmt.Errorf("reduce call %d: got %d", i, sum[0])
						}
						all := make([]int64, size*n)
						if err := Allgather(ctx, c, send, all); err != nil {
							return fmt.Errorf("allgather: %w", err)
						}
						if all[size*(n-1)] != int64(n-1) {
							return fmt.Errorf("allgather call %d: got %d", i, all[size*(n-1)])
						}
						out := make([]int64, size*n)
						if err := Alltoall(ctx, c, all, out); err != nil {
							return fmt.Errorf("alltoall: %w", err)
						}
						if err := Gather(ctx, c, send, all, 0); err != nil {
							return fmt.Errorf("gather: %w", err)
						}
						if err := Scatter(ctx, c, all, send, 0); err != nil {
							return fmt.Errorf("scatter: %w", err)
						}
						if send[0] != int64(r) {
							return fmt.Errorf("gather then scatter call %d: rank %d got %d", i, r, send[0])
						}
					}
					if r == 0 {
						return drewSeveral(c)
					}
					return nil
				}, withLottery)
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestLotteryHandsBackSends: a communicator that meets many keys, each
// drawn once in a while, does not keep every key's last sends: what rank 0
// holds stays within one draw's choices whatever the number of keys.
func TestLotteryHandsBackSends(t *testing.T) {
	const n, keys, rounds = 4, 16, 6
	ctx := context.Background()
	err := Local(n, func(c *Comm) error {
		for range rounds {
			for k := range keys {
				send := make([]byte, 1<<k) // one size class each
				recv := make([]byte, len(send))
				if err := Allreduce(ctx, c, send, recv, BOr); err != nil {
					return err
				}
			}
		}
		// The last draw's sends may be in flight; every earlier one was
		// handed back at a later draw.
		if held, most := c.in.HeldSends(), 2*(n-1); held > most {
			return fmt.Errorf("rank %d holds %d sends after %d keys, want at most %d", c.Rank(), held, keys, most)
		}
		return nil
	}, withLottery)
	if err != nil {
		t.Fatal(err)
	}
}

// drewSeveral checks that the lottery explored: some key of c ran more
// than one candidate, which only the draws can have chosen.
func drewSeveral(c *Comm) error {
	st := c.in.Endpoint().Lottery.Snapshot()
	for _, impls := range st.Keys {
		if len(impls) > 1 {
			return nil
		}
	}
	return fmt.Errorf("no key measured more than one algorithm: %v", st.Keys)
}

// TestLotterySkipped: nonblocking calls, forced algorithms and the table
// setting neither draw nor record.
func TestLotterySkipped(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		opts []Option
		call func(*Comm) error
	}{
		{"table", []Option{withTable}, func(c *Comm) error { return c.Barrier(ctx) }},
		{"with algorithm", []Option{withLottery}, func(c *Comm) error { return c.Barrier(ctx, WithAlgorithm("dissemination")) }},
		{"forced", []Option{withLottery, func(c *Config) { c.Collectives = map[string]string{"barrier": "tree"} }}, func(c *Comm) error { return c.Barrier(ctx) }},
		{"nonblocking", []Option{withLottery}, func(c *Comm) error {
			q, err := c.Ibarrier(ctx)
			if err != nil {
				return err
			}
			return q.Wait(ctx)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Local(3, func(c *Comm) error {
				for range 20 {
					if err := tt.call(c); err != nil {
						return err
					}
				}
				if n := c.in.Selected(); n > 0 {
					return fmt.Errorf("%d keys selected", n)
				}
				if l := c.in.Endpoint().Lottery; l != nil && len(l.Snapshot().Keys) > 0 {
					return fmt.Errorf("the lottery recorded %v", l.Snapshot().Keys)
				}
				return nil
			}, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLotteryMismatch: a rank selecting by table against ranks drawing
// by lottery fails every rank's call instead of hanging. The first calls
// may pass, since a cold lottery runs the table's choice first; the
// mismatch shows once the two run different algorithms.
func TestLotteryMismatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	errs := make([]error, 3)
	Local(3, func(c *Comm) error {
		if c.Rank() == 1 {
			// As if this rank ran with COMMTUNE_COLL_SELECT=table in a
			// process of its own (goroutine ranks share their settings).
			c.in.Endpoint().Lottery = nil
			c.in.Endpoint().Shared = nil
		}
		v := []float64{1}
		for range 50 {
			if errs[c.Rank()] = Allreduce(ctx, c, v, v, Sum); errs[c.Rank()] != nil {
				break
			}
		}
		return c.Barrier(ctx) // stays until the others have their error (it fails)
	}, withLottery)
	named := false
	for r, err := range errs {
		if err == nil || ctx.Err() != nil {
			t.Fatalf("mixed selection: rank %d: %v after %v, want a mismatch well before the deadline", r, err, time.Since(start))
		}
		named = named || strings.Contains(err.Error(), "lottery")
		t.Logf("rank %d: %v", r, err)
	}
	// The ranks that drew by lottery say so (the other cannot know).
	if !named {
		t.Errorf("no error says the ranks disagree on selection")
	}
	t.Logf("after %v", time.Since(start).Round(time.Millisecond))
}

// TestLotteryKeyMismatch: a rank whose first call differs from rank 0's,
// in size class or in operation, reads rank 0's choice for another key
// and says so, instead of running something else.
func TestLotteryKeyMismatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tests := []struct {
		name  string
		rank1 func(c *Comm) error
		want  string
	}{
		{"size class", func(c *Comm) error { return Bcast(ctx, c, make([]int, 2), 0) },
			"rank 0 calls bcast with a message of size class 2^5, this rank with 2^4"},
		{"operation", func(c *Comm) error { return Allreduce(ctx, c, make([]int, 4), make([]int, 4), Sum) },
			"rank 0 drew an algorithm for another collective call"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			err := Local(2, func(c *Comm) error {
				if c.Rank() == 0 {
					Bcast(ctx, c, make([]int, 4), 0) // its error, if any, is rank 1's doing
					<-done
					return nil
				}
				defer close(done)
				err := tc.rank1(c)
				if !errors.Is(err, ErrSizeMismatch) || !strings.Contains(err.Error(), tc.want) {
					return fmt.Errorf("rank 1: %v, want ErrSizeMismatch saying %q", err, tc.want)
				}
				return nil
			}, withLottery)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCollSelectConfig(t *testing.T) {
	tests := []struct {
		name, value string
		want        string // error substring; "" for none
		select_     string
	}{
		{EnvCollSelect, "", "", CollSelectLearn},
		{EnvCollSelect, "Lottery", "", CollSelectLottery},
		{EnvCollSelect, "table", "", CollSelectTable},
		{EnvCollSelect, "best", "want learn, table, fixed or lottery", ""},
		{EnvLotteryAlpha, "0.9", "", CollSelectLearn},
		{EnvLotteryAlpha, "1.5", "want a number in (0, 1]", ""},
		{EnvLotteryWeight, "x", "COMMTUNE_LOTTERY_WEIGHT", ""},
		{EnvLotteryMinTTL, "2", "", CollSelectLearn},
		{EnvLotteryMinTTL, "0", `COMMTUNE_LOTTERY_MIN_TTL="0": want a whole number of calls from 1 to 65536`, ""},
		{EnvLotteryMaxTTL, "many", "COMMTUNE_LOTTERY_MAX_TTL", ""},
		{EnvLotteryMaxTTL, "2", "", CollSelectLearn}, // the unset minimum follows it down
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			t.Setenv(EnvCollSelect, "") // the default, whatever the caller's environment says
			t.Setenv(tt.name, tt.value)
			c, err := buildConfig(nil)
			if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%v, want %q", err, tt.want)
			}
			if err == nil && c.CollSelect != tt.select_ {
				t.Errorf("CollSelect %q, want %q", c.CollSelect, tt.select_)
			}
		})
	}
	if _, err := coll.Parse(coll.Operation("select"), "x"); err == nil {
		t.Error(`an operation named "select" would clash with COMMTUNE_COLL_SELECT`)
	}
}

// TestWithChoice checks that a call reports what chose its algorithm and
// which one ran, under each way of choosing.
func TestWithChoice(t *testing.T) {
	ctx := context.Background()
	const n, elems = 4, 16
	table := "allreduce/node-segment" // the table's choice for goroutine ranks at this size
	tests := []struct {
		name   string
		opts   []Option
		call   []CollOption
		wantBy string
		want   string // the algorithm, or "" for any candidate
	}{
		{"table", []Option{withTable}, nil, ChosenByTable, table},
		{"option", nil, []CollOption{WithAlgorithm("ring")}, ChosenByOption, "allreduce/ring"},
		{"environment", []Option{func(c *Config) { c.Collectives = map[string]string{"allreduce": "ring"} }}, nil, ChosenByEnv, "allreduce/ring"},
		{"lottery", []Option{withLottery}, nil, ChosenByLottery, ""},
		{"option beats lottery", []Option{withLottery}, []CollOption{WithAlgorithm("ring")}, ChosenByOption, "allreduce/ring"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Local(n, func(c *Comm) error {
				send, recv := make([]float64, elems), make([]float64, elems)
				cands := coll.Candidates(coll.OpAllreduce, n, 8*elems, true)
				led := false
				for i := range 60 {
					var ch CollChoice
					if err := Allreduce(ctx, c, send, recv, Sum, append(tc.call, WithChoice(&ch))...); err != nil {
						return err
					}
					if ch.By != tc.wantBy {
						return fmt.Errorf("call %d: chosen by %q, want %q", i, ch.By, tc.wantBy)
					}
					switch {
					case tc.want != "" && ch.Algorithm != tc.want:
						return fmt.Errorf("call %d ran %q, want %q", i, ch.Algorithm, tc.want)
					case tc.want == "" && !containsName(cands, ch.Algorithm):
						return fmt.Errorf("call %d ran %q, not a candidate", i, ch.Algorithm)
					}
					if ch.Leader != "" && (tc.wantBy != ChosenByLottery || c.Rank() != 0) {
						return fmt.Errorf("rank %d call %d: leader %q under %s", c.Rank(), i, ch.Leader, ch.By)
					}
					led = led || ch.Leader != ""
				}
				// Rank 0 knows a leader once a draw has been recorded.
				if want := tc.wantBy == ChosenByLottery && c.Rank() == 0; led != want {
					return fmt.Errorf("rank %d: saw a leader %v, want %v", c.Rank(), led, want)
				}
				return nil
			}, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func containsName(algs []coll.Algorithm, name string) bool {
	for _, a := range algs {
		if a.Name() == name {
			return true
		}
	}
	return false
}
