package commtune

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/testenv"
)

// Every request kind is a Pending.
var _ Pending = (*Prequest)(nil)

// TestPrequestMisuse: starting an active request, freeing an active or
// freed one, a nil one, bad arguments at init — each a clear error, and
// nothing lost (the request still completes as it should).
func TestPrequestMisuse(t *testing.T) {
	ctx := context.Background()
	var nilReq *Prequest
	if err := nilReq.Start(); !errors.Is(err, errNilRequest) {
		t.Errorf("nil Start: %v", err)
	}
	if _, err := nilReq.Wait(ctx); !errors.Is(err, errNilRequest) {
		t.Errorf("nil Wait: %v", err)
	}
	if _, done, err := nilReq.Test(); !done || !errors.Is(err, errNilRequest) {
		t.Errorf("nil Test: %t, %v", done, err)
	}
	if err := nilReq.Free(); !errors.Is(err, errNilRequest) {
		t.Errorf("nil Free: %v", err)
	}
	if nilReq.Cancel() {
		t.Error("nil Cancel withdrew something")
	}
	select {
	case <-nilReq.Done():
	default:
		t.Error("nil Done is not closed")
	}
	if err := StartAll(nilReq); err == nil || !strings.Contains(err.Error(), "request 0") {
		t.Errorf("StartAll(nil): %v", err)
	}
	var nilComm *Comm
	if _, err := nilComm.SendInit(nil, 0, 0); !errors.Is(err, errNilComm) {
		t.Errorf("SendInit on nil: %v", err)
	}
	if _, err := nilComm.RecvInit(nil, 0, 0); !errors.Is(err, errNilComm) {
		t.Errorf("RecvInit on nil: %v", err)
	}
	if _, err := nilComm.BarrierInit(); !errors.Is(err, errNilComm) {
		t.Errorf("BarrierInit on nil: %v", err)
	}
	if _, err := AllreduceInit(nilComm, []int{1}, []int{0}, Sum); !errors.Is(err, errNilComm) {
		t.Errorf("AllreduceInit on nil: %v", err)
	}

	err := Local(2, func(c *Comm) error {
		me, peer := c.Rank(), 1-c.Rank()
		// Bad arguments at init, each named.
		bad := []struct {
			name string
			init func() (*Prequest, error)
			want string
		}{
			{"send to a rank out of range", func() (*Prequest, error) { return c.SendInit(nil, 2, 0) }, "destination rank 2"},
			{"send with a negative tag", func() (*Prequest, error) { return c.SendInit(nil, peer, -1) }, "send tag -1"},
			{"send to AnySource", func() (*Prequest, error) { return c.SendInit(nil, AnySource, 0) }, "destination rank -1"},
			{"receive from a rank out of range", func() (*Prequest, error) { return c.RecvInit(nil, 5, 0) }, "source rank 5"},
			{"receive with a tag above TagUB", func() (*Prequest, error) { return c.RecvInit(nil, peer, TagUB+1) }, "receive tag"},
			{"typed send of a non-plain type", func() (*Prequest, error) { return SendInitSlice(c, []string{"x"}, peer, 0) }, "not a plain type"},
			{"allreduce into a short buffer", func() (*Prequest, error) { return AllreduceInit(c, []int{1, 2}, []int{0}, Sum) }, "receive buffer of 1 elements for 2 sent"},
			{"allreduce with the zero Op", func() (*Prequest, error) { return AllreduceInit(c, []int{1}, []int{0}, Op{}) }, "zero Op"},
			{"reduce to a root out of range", func() (*Prequest, error) { return ReduceInit(c, []int{1}, []int{0}, Sum, 2) }, "root 2 out of range"},
			{"bcast from a negative root", func() (*Prequest, error) { return BcastInit(c, []int{1}, -1) }, "root -1 out of range"},
			{"scatter of a send buffer of the wrong size", func() (*Prequest, error) {
				return ScatterInit(c, make([]int, 3), make([]int, 1), me)
			}, "scatter: 3 elements to send"},
			{"gather into a short buffer", func() (*Prequest, error) {
				return GatherInit(c, make([]int, 2), make([]int, 3), me)
			}, "gather: receive buffer of 3 elements"},
			{"allgather into a short buffer", func() (*Prequest, error) { return AllgatherInit(c, []int{1}, []int{0}) }, "allgather"},
			{"alltoall of an odd length", func() (*Prequest, error) { return AlltoallInit(c, make([]int, 3), make([]int, 3)) }, "alltoall"},
			{"reducescatterblock of the wrong size", func() (*Prequest, error) {
				return ReduceScatterBlockInit(c, make([]int, 3), make([]int, 1), Sum)
			}, "reducescatterblock"},
			{"reducescatter counts not adding up", func() (*Prequest, error) {
				return ReduceScatterInit(c, make([]int, 4), make([]int, 1), []int{1, 1}, Sum)
			}, "add up to 2"},
			{"scatterv block outside the buffer", func() (*Prequest, error) {
				return ScattervInit(c, make([]int, 2), []int{1, 1}, []int{0, 5}, make([]int, 1), me)
			}, "lies outside"},
			{"alltoallv counts for too few ranks", func() (*Prequest, error) {
				return AlltoallvInit(c, make([]int, 1), []int{1}, []int{0}, make([]int, 1), []int{1}, []int{0})
			}, "1 counts and 1 displacements for 2 ranks"},
			{"an unknown algorithm", func() (*Prequest, error) {
				return AllreduceInit(c, []int{1}, []int{0}, Sum, WithAlgorithm("no-such-family"))
			}, "no-such-family"},
		}
		for _, b := range bad {
			p, err := b.init()
			if err == nil || !strings.Contains(err.Error(), b.want) || !strings.HasPrefix(err.Error(), "commtune: ") {
				return fmt.Errorf("%s: %v, want an error saying %q", b.name, err, b.want)
			}
			if p != nil {
				return fmt.Errorf("%s: a request with the error", b.name)
			}
		}

		// Start while active, Free while active: refused, and the
		// request completes as if they had not been made.
		buf := make([]byte, 8)
		var p *Prequest
		var err error
		if me == 0 {
			p, err = c.SendInit(buf, peer, 3)
			copy(buf, "persist!")
		} else {
			p, err = c.RecvInit(buf, peer, 3)
		}
		if err != nil {
			return err
		}
		if err := p.Start(); err != nil {
			return err
		}
		if err := p.Start(); err == nil || !strings.Contains(err.Error(), "started while active") {
			return fmt.Errorf("second Start: %v", err)
		}
		if err := StartAll(p); err == nil || !strings.Contains(err.Error(), "started while active") {
			return fmt.Errorf("StartAll of an active request: %v", err)
		}
		if err := p.Free(); err == nil || !strings.Contains(err.Error(), "freed while active") {
			return fmt.Errorf("Free while active: %v", err)
		}
		st, err := p.Wait(ctx)
		if err != nil {
			return err
		}
		if me == 1 && (string(buf) != "persist!" || st.Source != 0 || st.Tag != 3 || st.Count != 8) {
			return fmt.Errorf("received %q, status %+v", buf, st)
		}
		// Inactive: Wait and Test return at once, with an empty status.
		if st, err := p.Wait(ctx); err != nil || st != (Status{}) {
			return fmt.Errorf("Wait on an inactive request: %+v, %v", st, err)
		}
		if st, done, err := p.Test(); !done || err != nil || st != (Status{}) {
			return fmt.Errorf("Test on an inactive request: %+v, %t, %v", st, done, err)
		}
		if err := StartAll(p, p); err == nil || !strings.Contains(err.Error(), "the same") {
			return fmt.Errorf("StartAll of a request twice: %v", err)
		}
		if err := p.Free(); err != nil {
			return err
		}
		if err := p.Free(); err == nil || !strings.Contains(err.Error(), "freed twice") {
			return fmt.Errorf("second Free: %v", err)
		}
		if err := p.Start(); !errors.Is(err, errFreed) {
			return fmt.Errorf("Start after Free: %v", err)
		}

		// A collective: the same rules.
		in, out := []int64{int64(me + 1)}, []int64{0}
		q, err := AllreduceInit(c, in, out, Sum)
		if err != nil {
			return err
		}
		if err := q.Start(); err != nil {
			return err
		}
		if err := q.Start(); err == nil || !strings.Contains(err.Error(), "persistent allreduce started while active") {
			return fmt.Errorf("second Start of a collective: %v", err)
		}
		if err := q.Free(); err == nil || !strings.Contains(err.Error(), "persistent allreduce freed while active") {
			return fmt.Errorf("Free of an active collective: %v", err)
		}
		if q.Cancel() {
			return fmt.Errorf("a collective was cancelled")
		}
		if _, err := q.Wait(ctx); err != nil {
			return err
		}
		if out[0] != 3 {
			return fmt.Errorf("allreduce gave %d, want 3", out[0])
		}
		return q.Free()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPrequestTypedCount: a typed receive whose message is not a whole
// number of elements completes with an error saying so.
func TestPrequestTypedCount(t *testing.T) {
	ctx := context.Background()
	err := Local(2, func(c *Comm) error {
		if c.Rank() == 0 {
			return c.Send(ctx, make([]byte, 12), 1, 0)
		}
		p, err := RecvInitSlice(c, make([]int64, 4), 0, 0)
		if err != nil {
			return err
		}
		if err := p.Start(); err != nil {
			return err
		}
		st, err := p.Wait(ctx)
		if err == nil || !strings.Contains(err.Error(), "not a whole number of 8-byte elements") || st.Count != 12 {
			return fmt.Errorf("a 12-byte message into int64s: %+v, %v", st, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPrequestCancel: a receive that never matches is cancelled, its
// Wait says so, and the request is freed; started again, it receives.
func TestPrequestCancel(t *testing.T) {
	ctx := context.Background()
	err := Local(2, func(c *Comm) error {
		if c.Rank() == 0 {
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			return SendSlice(ctx, c, []int32{41, 42}, 1, 9)
		}
		buf := make([]int32, 2)
		p, err := RecvInitSlice(c, buf, 0, 9)
		if err != nil {
			return err
		}
		if err := p.Start(); err != nil {
			return err
		}
		if !p.Cancel() {
			return fmt.Errorf("an unmatched receive was not cancelled")
		}
		if _, err := p.Wait(ctx); !errors.Is(err, ErrCanceled) {
			return fmt.Errorf("Wait of a cancelled receive: %v", err)
		}
		if err := p.Start(); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if st, err := p.Wait(ctx); err != nil || st.Count != 8 || buf[0] != 41 || buf[1] != 42 {
			return fmt.Errorf("restarted receive: %v, %+v, %v", buf, st, err)
		}
		return p.Free()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPersistentAlgorithmFixed: under the lottery, which draws a blocking
// call's algorithm call by call, a persistent call runs the one fixed at
// init at every start, the same on every rank, and says who chose it.
func TestPersistentAlgorithmFixed(t *testing.T) {
	ctx := context.Background()
	const n, starts = 3, 200
	ran := make([][]string, n)
	err := Local(n, func(c *Comm) error {
		in, out := make([]float64, 64), make([]float64, 64)
		var ch CollChoice
		p, err := AllreduceInit(c, in, out, Sum, WithChoice(&ch))
		if err != nil {
			return err
		}
		drawn := false
		for i := range starts {
			if err := p.Start(); err != nil {
				return err
			}
			if _, err := p.Wait(ctx); err != nil {
				return err
			}
			if ch.By != ChosenByTable {
				return fmt.Errorf("start %d: chosen by %q, want %q", i, ch.By, ChosenByTable)
			}
			ran[c.Rank()] = append(ran[c.Rank()], ch.Algorithm)
			// The same call made blocking is the lottery's.
			var bl CollChoice
			if err := Allreduce(ctx, c, in, out, Sum, WithChoice(&bl)); err != nil {
				return err
			}
			drawn = drawn || bl.By == ChosenByLottery
		}
		if !drawn {
			return fmt.Errorf("no blocking call was the lottery's")
		}
		return p.Free()
	}, withLottery)
	if err != nil {
		t.Fatal(err)
	}
	for r := range n {
		for i, a := range ran[r] {
			if a != ran[0][0] {
				t.Fatalf("rank %d start %d ran %q, rank 0's first %q", r, i, a, ran[0][0])
			}
		}
	}
}

// TestPersistentDisagree: ranks whose inits fix different algorithms
// fail the start, every one of them, rather than run different ones.
func TestPersistentDisagree(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	algs := []string{"allreduce/ring", "allreduce/recursive-doubling"}
	err := Local(2, func(c *Comm) error {
		in, out := make([]float64, 16), make([]float64, 16)
		p, err := AllreduceInit(c, in, out, Sum, WithAlgorithm(algs[c.Rank()]))
		if err != nil {
			return err
		}
		if err := p.Start(); err != nil {
			return err
		}
		if _, err := p.Wait(ctx); !errors.Is(err, ErrSizeMismatch) {
			return fmt.Errorf("rank %d: %v, want ErrSizeMismatch", c.Rank(), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPersistentProgress: a started collective completes on every rank
// while a rank that started it waits, before its own Wait, for a message
// a peer sends only once the call is over there — on each route a start
// takes: the node segment (small), the team (large), messages (forced).
func TestPersistentProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name  string
		elems int
		opts  []CollOption
	}{
		{"segment", 4, nil},
		{"team", 8 << 10, nil},
		{"messages", 4, []CollOption{WithAlgorithm("recursive-doubling")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 3
			err := Local(n, func(c *Comm) error {
				me := c.Rank()
				in, out := make([]int64, tc.elems), make([]int64, tc.elems)
				p, err := AllreduceInit(c, in, out, Sum, tc.opts...)
				if err != nil {
					return err
				}
				token := []byte{0}
				for i := range 50 {
					for k := range in {
						in[k] = int64(i*1000 + me*10 + k)
					}
					if err := p.Start(); err != nil {
						return err
					}
					if me == 0 {
						// The others' Waits need nothing more of rank 0.
						for r := 1; r < n; r++ {
							if _, err := c.Recv(ctx, token, r, i); err != nil {
								return err
							}
						}
					}
					if _, err := p.Wait(ctx); err != nil {
						return err
					}
					if me != 0 {
						if err := c.Send(ctx, token, 0, i); err != nil {
							return err
						}
					}
					for k, v := range out {
						if want := int64(n*(i*1000+k) + 10*n*(n-1)/2); v != want {
							return fmt.Errorf("start %d: cell %d is %d, want %d", i, k, v, want)
						}
					}
				}
				return p.Free()
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPersistentInterleaved: persistent starts among blocking and
// nonblocking calls of the same communicator, waited in another order
// than started, through Wait, Test, Done and a Wait whose context can
// end: every call gets its own data, in the order all ranks make them.
func TestPersistentInterleaved(t *testing.T) {
	ctx := context.Background()
	iters := testenv.Pick(1000, 200)
	for _, n := range []int{2, 3, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var arrived atomic.Int64
			err := Local(n, func(c *Comm) error {
				me := int64(c.Rank())
				sum := func(i, k int64) int64 { return int64(n)*(i*100+k) + int64(n*(n-1)/2) }
				ain, aout := make([]int64, 3), make([]int64, 3)
				a, err := AllreduceInit(c, ain, aout, Sum)
				if err != nil {
					return err
				}
				root := n - 1
				bbuf := make([]int64, 2)
				b, err := BcastInit(c, bbuf, root)
				if err != nil {
					return err
				}
				bar, err := c.BarrierInit()
				if err != nil {
					return err
				}
				big := make([]int64, 4096) // beyond a segment slot: the team's route
				bigOut := make([]int64, 4096)
				g, err := AllreduceInit(c, big, bigOut, Max)
				if err != nil {
					return err
				}
				for i := range int64(iters) {
					for k := range ain {
						ain[k] = i*100 + int64(k) + me
					}
					for k := range bbuf {
						bbuf[k] = -1 - me
						if int(me) == root {
							bbuf[k] = i*7 + int64(k)
						}
					}
					big[int(i)%len(big)] = i*10 + me
					arrived.Add(1)
					if err := StartAll(a, bar, b, g); err != nil {
						return err
					}
					// Blocking and nonblocking calls behind the started ones.
					one := []int64{i + me}
					if err := Allreduce(ctx, c, one, one, Sum); err != nil {
						return err
					}
					if want := int64(n)*i + int64(n*(n-1)/2); one[0] != want {
						return fmt.Errorf("call %d: blocking allreduce %d, want %d", i, one[0], want)
					}
					nb := []int64{me}
					q, err := Ibcast(ctx, c, nb, 0)
					if err != nil {
						return err
					}
					// Completion in another order, by another call each time.
					switch i % 4 {
					case 0:
						if _, err := b.Wait(ctx); err != nil {
							return err
						}
					case 1:
						for {
							_, done, err := b.Test()
							if err != nil {
								return err
							}
							if done {
								break
							}
						}
					case 2:
						<-b.Done()
						if _, err := b.Wait(ctx); err != nil {
							return err
						}
					case 3:
						wctx, cancel := context.WithTimeout(ctx, time.Minute)
						_, err := b.Wait(wctx)
						cancel()
						if err != nil {
							return err
						}
					}
					if _, err := bar.Wait(ctx); err != nil {
						return err
					}
					if got := arrived.Load(); got < int64(n)*(i+1) {
						return fmt.Errorf("call %d: left the barrier with %d ranks arrived, want %d", i, got, int64(n)*(i+1))
					}
					if _, err := g.Wait(ctx); err != nil {
						return err
					}
					if _, err := a.Wait(ctx); err != nil {
						return err
					}
					if err := q.Wait(ctx); err != nil {
						return err
					}
					for k, v := range aout {
						if want := sum(i, int64(k)); v != want {
							return fmt.Errorf("call %d: allreduce cell %d is %d, want %d", i, k, v, want)
						}
					}
					for k, v := range bbuf {
						if want := i*7 + int64(k); v != want {
							return fmt.Errorf("call %d: bcast cell %d is %d, want %d", i, k, v, want)
						}
					}
					if want := i*10 + int64(n-1); bigOut[int(i)%len(big)] != want {
						return fmt.Errorf("call %d: max %d, want %d", i, bigOut[int(i)%len(big)], want)
					}
					if nb[0] != 0 {
						return fmt.Errorf("call %d: ibcast gave %d", i, nb[0])
					}
				}
				for _, p := range []*Prequest{a, b, bar, g} {
					if err := p.Free(); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPersistentInPlace: a persistent Allreduce whose send and receive
// buffers are one slice reads, at each start, what the slice holds then.
func TestPersistentInPlace(t *testing.T) {
	ctx := context.Background()
	for _, elems := range []int{4, 4096} {
		t.Run(fmt.Sprint(elems), func(t *testing.T) {
			err := Local(3, func(c *Comm) error {
				buf := make([]int64, elems)
				p, err := AllreduceInit(c, buf, buf, Sum)
				if err != nil {
					return err
				}
				for i := range int64(200) {
					for k := range buf {
						buf[k] = i + int64(k*c.Rank())
					}
					if err := p.Start(); err != nil {
						return err
					}
					if _, err := p.Wait(ctx); err != nil {
						return err
					}
					for k, v := range buf {
						if want := 3*i + int64(3*k); v != want {
							return fmt.Errorf("start %d: cell %d is %d, want %d", i, k, v, want)
						}
					}
				}
				return p.Free()
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPersistentRootRunsAhead: a Bcast root whose starts end as soon as
// it has published runs ahead of a reader that is late; once the slots it
// would publish into are not known free, its starts run in goroutines of
// their own (waiting there for the reader), and every start of the
// reader gets its own data.
func TestPersistentRootRunsAhead(t *testing.T) {
	ctx := context.Background()
	const starts = 100
	err := Local(2, func(c *Comm) error {
		buf := make([]int64, 2)
		p, err := BcastInit(c, buf, 0)
		if err != nil {
			return err
		}
		if c.Rank() == 1 {
			time.Sleep(20 * time.Millisecond) // the root runs ahead meanwhile
		}
		for i := range int64(starts) {
			if c.Rank() == 0 {
				buf[0], buf[1] = i, -i
			} else {
				buf[0], buf[1] = -1, -1
			}
			if err := p.Start(); err != nil {
				return err
			}
			if _, err := p.Wait(ctx); err != nil {
				return err
			}
			if buf[0] != i || buf[1] != -i {
				return fmt.Errorf("rank %d start %d: %v", c.Rank(), i, buf)
			}
		}
		return p.Free()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPersistentLogicalAndChoice: a logical operation's result of one
// rank's value alone is 1 or 0 at every start (Scan's on rank 0, any
// reduction on one rank), and WithChoice says, at every start, that the
// node segment ran, as the table chose.
func TestPersistentLogicalAndChoice(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			err := Local(n, func(c *Comm) error {
				in, scan, all := []int8{5}, []int8{0}, []int8{0}
				var ch CollChoice
				s, err := ScanInit(c, in, scan, LOr)
				if err != nil {
					return err
				}
				a, err := AllreduceInit(c, in, all, LAnd, WithChoice(&ch))
				if err != nil {
					return err
				}
				for i := range 50 {
					in[0] = int8(5 + i%3)
					scan[0], all[0] = 9, 9
					if err := StartAll(s, a); err != nil {
						return err
					}
					if _, err := s.Wait(ctx); err != nil {
						return err
					}
					if _, err := a.Wait(ctx); err != nil {
						return err
					}
					if scan[0] != 1 || all[0] != 1 {
						return fmt.Errorf("start %d: scan %d, allreduce %d, want 1 and 1", i, scan[0], all[0])
					}
					if n > 1 && (ch.Algorithm != "allreduce/node-segment" || ch.By != ChosenByTable) {
						return fmt.Errorf("start %d: %+v, want the node segment by the table", i, ch)
					}
				}
				return errors.Join(s.Free(), a.Free())
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
