package comm

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/job"
)

// allreduceF64 runs a sum Allreduce of v in place with options o.
func allreduceF64(ctx context.Context, c *Comm, v []byte, o Options) error {
	sum, err := coll.Kernel(coll.OpSum, reflect.Float64)
	if err != nil {
		return err
	}
	k, err := c.Prepare(coll.OpAllreduce, coll.Layout{Bytes: len(v), Elem: 8}, v, v, sum, true, o)
	if err != nil {
		return err
	}
	return k.Run(ctx, true)
}

// TestTeamChoice: goroutine ranks run small calls through the node
// segment and larger ones by the direct algorithm, by the table, and ranks
// apart refuse direct when it is asked for, saying why.
func TestTeamChoice(t *testing.T) {
	run(t, 3, func(c *Comm) error {
		for _, tc := range []struct {
			bytes int
			want  string
		}{{64, "allreduce/node-segment"}, {64 << 10, "allreduce/direct"}} {
			var ch Choice
			if err := allreduceF64(context.Background(), c, make([]byte, tc.bytes), Options{Choice: func(got Choice) { ch = got }}); err != nil {
				return err
			}
			if ch.Algorithm != tc.want || ch.By != ChosenByTable {
				return fmt.Errorf("goroutine ranks ran %d bytes by %s chosen by %s, want %s by the table", tc.bytes, ch.Algorithm, ch.By, tc.want)
			}
		}
		return nil
	})
	runApart(t, 2, func(c *Comm) error {
		err := allreduceF64(context.Background(), c, make([]byte, 64), Options{Algorithm: "direct"})
		if err == nil || !strings.Contains(err.Error(), "goroutine ranks") {
			return fmt.Errorf("direct forced on ranks apart: %v, want an error saying it needs goroutine ranks", err)
		}
		return nil
	})
}

// TestTeamMismatch: ranks that disagree on a call's size all fail it with
// ErrSizeMismatch, naming both calls, and every later call on the
// communicator fails the same way: the ranks are out of step.
func TestTeamMismatch(t *testing.T) {
	for _, n := range []int{8, 4096} { // inline, and read in place
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			run(t, 3, func(c *Comm) error {
				ctx := context.Background()
				v := make([]byte, n+8*c.Rank())
				err := allreduceF64(ctx, c, v, Options{})
				if !errors.Is(err, core.ErrSizeMismatch) || !strings.Contains(err.Error(), "allreduce of") {
					return fmt.Errorf("sizes differ: %v, want ErrSizeMismatch naming the calls", err)
				}
				if err := allreduceF64(ctx, c, make([]byte, n), Options{}); !errors.Is(err, core.ErrSizeMismatch) {
					return fmt.Errorf("the call after: %v, want ErrSizeMismatch", err)
				}
				return nil
			})
		})
	}
}

// TestTeamLostPeer: a rank that leaves while the others wait for it in a
// collective call ends their wait with an error instead of a hang, and a
// context ending on one rank ends the call on every rank.
func TestTeamLostPeer(t *testing.T) {
	run(t, 3, func(c *Comm) error {
		if c.Rank() == 2 {
			return nil // leaves: its endpoint closes
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := allreduceF64(ctx, c, make([]byte, 4096), Options{})
		if err == nil || ctx.Err() != nil {
			return fmt.Errorf("allreduce without rank 2: %v (context: %v), want an error before the deadline", err, ctx.Err())
		}
		return nil
	})
	run(t, 3, func(c *Comm) error {
		ctx := context.Background()
		if c.Rank() == 0 {
			short, cancel := context.WithCancel(ctx)
			cancel()
			ctx = short
		}
		err := allreduceF64(ctx, c, make([]byte, 4096), Options{})
		if err == nil {
			return fmt.Errorf("rank %d: allreduce with rank 0's context ended: no error", c.Rank())
		}
		return nil
	})
}

// TestTeamRunAhead: roots of small broadcasts and the ranks of small
// gathers and reductions that only give do not wait for the others, so a
// rank runs ahead by a call; thousands of such calls, with the root
// moving, mixed with calls read in place, each check their data.
func TestTeamRunAhead(t *testing.T) {
	const n, calls = 4, 3000
	sum, err := coll.Kernel(coll.OpSum, reflect.Int64)
	if err != nil {
		t.Fatal(err)
	}
	run(t, n, func(c *Comm) error {
		ctx := context.Background()
		do := func(op coll.Operation, l coll.Layout, in, out []byte) error {
			k, err := c.Prepare(op, l, in, out, sum, true, Options{})
			if err != nil {
				return err
			}
			return k.Run(ctx, true)
		}
		for i := range calls {
			root := i % n
			switch i % 3 {
			case 0: // an inline broadcast from root, or 4K read in place
				size := 8
				if i%30 == 0 {
					size = 4096
				}
				buf := make([]byte, size)
				if c.rank == root {
					fill(buf, i)
				}
				if err := do(coll.OpBcast, coll.Layout{Root: root, Bytes: size, Elem: 8}, nil, buf); err != nil {
					return err
				}
				if want := filled(size, i); string(buf) != string(want) {
					return fmt.Errorf("call %d: broadcast from %d: wrong data", i, root)
				}
			case 1: // gather one int64 from each at root
				in := int64Bytes(int64(i*10 + c.rank))
				out := make([]byte, 8*n)
				if err := do(coll.OpGather, coll.Layout{Root: root, Bytes: 8, Elem: 8}, in, out); err != nil {
					return err
				}
				if c.rank == root {
					for j := range n {
						if got := int64(binaryLE(out[8*j:])); got != int64(i*10+j) {
							return fmt.Errorf("call %d: gather at %d: %d from rank %d", i, root, got, j)
						}
					}
				}
			case 2: // reduce a sum of ints to root
				in := int64Bytes(int64(i + c.rank))
				out := make([]byte, 8)
				if err := do(coll.OpReduce, coll.Layout{Root: root, Bytes: 8, Elem: 8}, in, out); err != nil {
					return err
				}
				if want := int64(n*i + n*(n-1)/2); c.rank == root && int64(binaryLE(out)) != want {
					return fmt.Errorf("call %d: reduce at %d: %d, want %d", i, root, int64(binaryLE(out)), want)
				}
			}
		}
		return nil
	})
}

func fill(b []byte, seed int) {
	for j := range b {
		b[j] = byte(seed*7 + j)
	}
}

func filled(n, seed int) []byte {
	b := make([]byte, n)
	fill(b, seed)
	return b
}

func int64Bytes(v int64) []byte {
	b := make([]byte, 8)
	for j := range 8 {
		b[j] = byte(uint64(v) >> (8 * j))
	}
	return b
}

func binaryLE(b []byte) uint64 {
	var v uint64
	for j := range 8 {
		v |= uint64(b[j]) << (8 * j)
	}
	return v
}

// TestTeamLayout: slots and places are whole cache lines, and a place's
// first line holds its meeting step, signature, length and the first
// bytes of its data.
func TestTeamLayout(t *testing.T) {
	const line = 64
	var s teamSlot
	var p teamPub
	for _, c := range []struct {
		what string
		v    uintptr
	}{
		{"slot size", unsafe.Sizeof(s)},
		{"place size", unsafe.Sizeof(p)},
		{"first place", unsafe.Offsetof(s.pub)},
	} {
		if c.v%line != 0 || c.v == 0 {
			t.Errorf("%s: %d bytes, not a whole number of %d-byte lines", c.what, c.v, line)
		}
	}
	if end := unsafe.Offsetof(p.data) + 8; end > line {
		t.Errorf("a place's first line ends at %d: the first data is past it", end)
	}
	run(t, 2, func(c *Comm) error {
		m := c.teamOf()
		if at := uintptr(unsafe.Pointer(&m.t.slots[0])); at%line != 0 {
			return fmt.Errorf("slots start at %#x, not on a line", at)
		}
		return nil
	})
}

// TestTeamLeave: communicators made and closed over and over leave no
// team behind once every member has closed its own.
func TestTeamLeave(t *testing.T) {
	var shared *job.Shared
	run(t, 3, func(c *Comm) error {
		if c.rank == 0 {
			shared = c.ep.Shared // the same on every rank
		}
		for range 20 {
			d, err := c.Dup()
			if err != nil {
				return err
			}
			if err := allreduceF64(context.Background(), d, make([]byte, 64), Options{}); err != nil {
				return err
			}
			d.Close()
		}
		return allreduceF64(context.Background(), c, make([]byte, 64), Options{})
	})
	left := 0
	shared.Teams.Range(func(any, any) bool { left++; return true })
	if left != 0 {
		t.Errorf("%d teams left after every communicator closed", left)
	}
}

// TestTeamGiversCloseFirst: the ranks of a small Reduce that only give
// finish, and close their communicator, before the root has even joined:
// the root still finds their team and their data.
func TestTeamGiversCloseFirst(t *testing.T) {
	sum, err := coll.Kernel(coll.OpSum, reflect.Int64)
	if err != nil {
		t.Fatal(err)
	}
	run(t, 4, func(c *Comm) error {
		for i := range 5 {
			d, err := c.Dup()
			if err != nil {
				return err
			}
			if d.rank == 0 {
				time.Sleep(2 * time.Millisecond) // the others give and close first
			}
			out := make([]byte, 8)
			k, err := d.Prepare(coll.OpReduce, coll.Layout{Root: 0, Bytes: 8, Elem: 8}, int64Bytes(int64(d.rank+i)), out, sum, true, Options{})
			if err != nil {
				return err
			}
			if err := k.Run(context.Background(), true); err != nil {
				return err
			}
			if want := int64(6 + 4*i); d.rank == 0 && int64(binaryLE(out)) != want {
				return fmt.Errorf("call %d: sum %d, want %d", i, int64(binaryLE(out)), want)
			}
			d.Close()
		}
		return nil
	})
}
