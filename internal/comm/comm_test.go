package comm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/job"
)

// run runs fn on n goroutine ranks of world communicators over the
// in-process driver, straight from job.Local, and returns the first error.
func run(t *testing.T, n int, fn func(c *Comm) error, opts ...config.Option) {
	t.Helper()
	runLocal(t, n, false, fn, opts...)
}

// runApart is run with ranks that do not share their memory, as ranks
// in processes of their own: collectives pass messages.
func runApart(t *testing.T, n int, fn func(c *Comm) error, opts ...config.Option) {
	t.Helper()
	runLocal(t, n, true, fn, opts...)
}

func runLocal(t *testing.T, n int, apart bool, fn func(c *Comm) error, opts ...config.Option) {
	t.Helper()
	cfg, err := config.Build(func(string) (string, bool) { return "", false }, opts)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := job.Local(n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if apart {
		for _, ep := range eps {
			ep.Shared = nil
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := NewWorld(ep, r, n)
			errs[r] = fn(c)
			if errs[r] != nil {
				ep.Fail(errs[r])
			}
			c.Close()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// TestSplit: members of a color form a communicator ordered by key, then
// by rank; Undefined gets none; the new communicator's messages stay in
// it.
func TestSplit(t *testing.T) {
	tests := []struct {
		name       string
		color, key func(r int) int
		want       func(r int) []int // world ranks of r's communicator, nil for none
	}{
		{"halves", func(r int) int { return r / 2 }, func(r int) int { return 0 },
			func(r int) []int { return []int{r / 2 * 2, r/2*2 + 1} }},
		{"reversed by key", func(int) int { return 0 }, func(r int) int { return -r },
			func(int) []int { return []int{3, 2, 1, 0} }},
		{"odd ranks left out", func(r int) int {
			if r%2 == 1 {
				return Undefined
			}
			return 5
		}, func(r int) int { return r }, func(r int) []int {
			if r%2 == 1 {
				return nil
			}
			return []int{0, 2}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run(t, 4, func(c *Comm) error {
				s, err := c.Split(context.Background(), tt.color(c.Rank()), tt.key(c.Rank()))
				if err != nil {
					return err
				}
				want := tt.want(c.Rank())
				if want == nil {
					if s != nil {
						return fmt.Errorf("rank %d: got a communicator, want none", c.Rank())
					}
					return nil
				}
				var got []int
				for r := range s.Size() {
					got = append(got, s.WorldRank(r))
				}
				if !reflect.DeepEqual(got, want) || s.WorldRank(s.Rank()) != c.Rank() {
					return fmt.Errorf("rank %d: group %v (rank %d), want %v", c.Rank(), got, s.Rank(), want)
				}
				if s.ctx == c.ctx || s.collCtx == c.collCtx {
					return fmt.Errorf("rank %d: the split shares a context with its parent", c.Rank())
				}
				// A ring on the new communicator: every rank hears its
				// predecessor there, by its rank there.
				next, prev := (s.Rank()+1)%s.Size(), (s.Rank()+s.Size()-1)%s.Size()
				out, in := []byte{byte(s.Rank())}, make([]byte, 1)
				st, err := s.Sendrecv(context.Background(), out, next, 7, in, prev, 7)
				if err != nil {
					return err
				}
				if st.Source != prev || in[0] != byte(prev) {
					return fmt.Errorf("rank %d: received %d from %d, want from %d", c.Rank(), in[0], st.Source, prev)
				}
				return nil
			})
		})
	}
}

// TestDupContexts: a Dup matches nothing of its parent's, and two Dups of
// one communicator differ, on every rank alike.
func TestDupContexts(t *testing.T) {
	run(t, 2, func(c *Comm) error {
		a, err := c.Dup()
		if err != nil {
			return err
		}
		b, err := c.Dup()
		if err != nil {
			return err
		}
		if a.ctx == c.ctx || b.ctx == a.ctx {
			return fmt.Errorf("contexts %x %x %x", c.ctx, a.ctx, b.ctx)
		}
		peer := 1 - c.Rank()
		if c.Rank() == 0 {
			if err := b.Send(context.Background(), []byte("b"), peer, 1); err != nil {
				return err
			}
			return a.Send(context.Background(), []byte("a"), peer, 1)
		}
		buf := make([]byte, 1)
		if _, err := a.Recv(context.Background(), buf, peer, 1); err != nil || buf[0] != 'a' {
			return fmt.Errorf("a received %q, %v", buf, err)
		}
		if _, err := b.Recv(context.Background(), buf, peer, 1); err != nil || buf[0] != 'b' {
			return fmt.Errorf("b received %q, %v", buf, err)
		}
		return nil
	})
}

// TestPrepare: a call's algorithm comes from its option, else the
// configuration, else the table; bad options fail before any message.
func TestPrepare(t *testing.T) {
	sum, err := coll.Kernel(coll.OpSum, reflect.Float64)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		opts        Options
		commutative bool
		wantAlg     string // "" for the table's
		wantBy      string
		wantErr     error
	}{
		{"table", Options{}, true, "", ChosenByTable, nil},
		{"option", Options{Algorithm: "ring"}, true, "allreduce/ring", ChosenByOption, nil},
		{"unknown", Options{Algorithm: "no-such"}, true, "", "", errAny},
		{"reorders a non-commutative op", Options{Algorithm: "ring"}, false, "", "", coll.ErrNotCommutative},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runApart(t, 3, func(c *Comm) error {
				v := make([]byte, 8*4)
				for i := range 4 {
					binary.LittleEndian.PutUint64(v[8*i:], math.Float64bits(float64(c.Rank()+i)))
				}
				var ch Choice
				o := tt.opts
				o.Choice = func(got Choice) { ch = got }
				k, err := c.Prepare(coll.OpAllreduce, coll.Layout{Bytes: len(v), Elem: 8}, v, v, sum, tt.commutative, o)
				switch {
				case tt.wantErr == errAny && err != nil, tt.wantErr != nil && errors.Is(err, tt.wantErr):
					return nil
				case tt.wantErr != nil:
					return fmt.Errorf("error %v, want %v", err, tt.wantErr)
				case err != nil:
					return err
				}
				if err := k.Run(context.Background(), true); err != nil {
					return err
				}
				if got := math.Float64frombits(binary.LittleEndian.Uint64(v)); got != 0+1+2 {
					return fmt.Errorf("sum %v, want 3", got)
				}
				want := tt.wantAlg
				if want == "" {
					want = coll.Decide(coll.OpAllreduce, 3, len(v), true).Name()
				}
				if ch.Algorithm != want || ch.By != tt.wantBy {
					return fmt.Errorf("ran %s chosen by %s, want %s by %s", ch.Algorithm, ch.By, want, tt.wantBy)
				}
				return nil
			}, selectBy(config.CollSelectTable))
		})
	}
}

// selectBy is the option that sets how collective algorithms are chosen.
func selectBy(how string) config.Option {
	return func(c *config.Config) { c.CollSelect = how }
}

// errAny stands for any error in a table.
var errAny = errors.New("any error")

// TestClosed: every call on a closed communicator, or on one whose world
// has closed, fails with ErrClosed.
func TestClosed(t *testing.T) {
	run(t, 1, func(c *Comm) error {
		d, err := c.Dup()
		if err != nil {
			return err
		}
		if err := c.Close(); err != nil {
			return err
		}
		for name, err := range map[string]error{
			"world send": c.Send(context.Background(), nil, 0, 0),
			"dup send":   d.Send(context.Background(), nil, 0, 0),
			"dup check":  d.Check(),
		} {
			if !errors.Is(err, core.ErrClosed) {
				return fmt.Errorf("%s: %v, want ErrClosed", name, err)
			}
		}
		return nil
	})
}

// TestTransportMix names goroutine ranks and a lone rank, as rank 0 sees
// them (the only view a key takes).
func TestTransportMix(t *testing.T) {
	run(t, 2, func(c *Comm) error {
		if got := c.TransportMix(); c.Rank() == 0 && got != "inproc" {
			return fmt.Errorf("world: %q, want inproc", got)
		}
		s, err := c.Split(context.Background(), c.Rank(), 0)
		if err != nil {
			return err
		}
		if got := s.TransportMix(); got != "self" {
			return fmt.Errorf("a rank alone: %q, want self", got)
		}
		return nil
	})
}

// TestPrepareRepeats: calls that repeat the last one reuse its plan, and
// each call still runs what it asks for: the table's choice for its size
// and commutativity, or the option's algorithm, interleaved in any order.
func TestPrepareRepeats(t *testing.T) {
	sum, err := coll.Kernel(coll.OpSum, reflect.Float64)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		elems       int
		commutative bool
		algorithm   string // Options.Algorithm
	}{
		{4, true, ""}, {4, true, ""}, {4, true, "ring"}, {4, true, ""},
		{1 << 15, true, ""}, {1 << 15, true, ""}, {4, true, ""},
		{4, false, ""}, {4, true, ""}, {1 << 15, true, "ring"}, {1 << 15, true, ""},
	}
	runApart(t, 3, func(c *Comm) error {
		for i, s := range steps {
			v := make([]byte, 8*s.elems)
			for j := range s.elems {
				binary.LittleEndian.PutUint64(v[8*j:], math.Float64bits(float64(c.Rank()+j)))
			}
			var ch Choice
			o := Options{Algorithm: s.algorithm, Choice: func(got Choice) { ch = got }}
			k, err := c.Prepare(coll.OpAllreduce, coll.Layout{Bytes: len(v), Elem: 8}, v, v, sum, s.commutative, o)
			if err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
			if err := k.Run(context.Background(), true); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
			if got := math.Float64frombits(binary.LittleEndian.Uint64(v)); got != 0+1+2 {
				return fmt.Errorf("step %d: sum %v, want 3", i, got)
			}
			want, by := coll.Decide(coll.OpAllreduce, 3, len(v), s.commutative).Name(), ChosenByTable
			if s.algorithm != "" {
				want, by = "allreduce/"+s.algorithm, ChosenByOption
			}
			if ch.Algorithm != want || ch.By != by {
				return fmt.Errorf("step %d: ran %s chosen by %s, want %s by %s", i, ch.Algorithm, ch.By, want, by)
			}
		}
		return nil
	}, selectBy(config.CollSelectTable))
}

// TestPullsOp: within the job's pull range, operations that only move
// data pull, reductions from reducePullMin, Reduce never.
func TestPullsOp(t *testing.T) {
	for _, tc := range []struct {
		op    coll.Operation
		bytes int
		want  bool
	}{
		{coll.OpBcast, 64 << 10, true},
		{coll.OpAlltoall, 16 << 10, true},
		{coll.OpAllgather, 1 << 20, true},
		{coll.OpAllreduce, reducePullMin - 8, false},
		{coll.OpAllreduce, reducePullMin, true},
		{coll.OpReduceScatterBlock, 4 << 20, true},
		{coll.OpReduce, reducePullMin, false},
		{coll.OpReduce, 4 << 20, false},
	} {
		if got := pullsOp(tc.op, tc.bytes); got != tc.want {
			t.Errorf("pullsOp(%s, %d) = %v, want %v", tc.op, tc.bytes, got, tc.want)
		}
	}
}
