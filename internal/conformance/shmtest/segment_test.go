package shmtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/testenv"
)

// segmentJob is one rank of TestNodeSegment: on a communicator of its
// own, small calls report the node segment as their algorithm, give the
// right results, and every part this process maps is a file already
// removed (a crash leaves nothing in /dev/shm); a call too large for the
// segment passes messages.
func segmentJob(ctx context.Context, c *commtune.Comm) error {
	d, err := c.Dup()
	if err != nil {
		return err
	}
	defer d.Close()
	n, me := d.Size(), d.Rank()
	calls := []struct {
		want string // the algorithm that must run; "" for any that passes messages
		call func(o commtune.CollOption) error
	}{
		{"allreduce/node-segment", func(o commtune.CollOption) error {
			out := []int64{0}
			if err := commtune.Allreduce(ctx, d, []int64{int64(me + 1)}, out, commtune.Sum, o); err != nil {
				return err
			}
			if want := int64(n * (n + 1) / 2); out[0] != want {
				return fmt.Errorf("allreduce: %d, want %d", out[0], want)
			}
			return nil
		}},
		{"bcast/node-segment", func(o commtune.CollOption) error {
			buf := []int32{int32(me)}
			if err := commtune.Bcast(ctx, d, buf, n-1, o); err != nil {
				return err
			}
			if buf[0] != int32(n-1) {
				return fmt.Errorf("bcast: %d, want %d", buf[0], n-1)
			}
			return nil
		}},
		{"barrier/node-segment", func(o commtune.CollOption) error { return d.Barrier(ctx, o) }},
		{"allgather/node-segment", func(o commtune.CollOption) error {
			out := make([]int16, n)
			if err := commtune.Allgather(ctx, d, []int16{int16(10 * me)}, out, o); err != nil {
				return err
			}
			for r, v := range out {
				if v != int16(10*r) {
					return fmt.Errorf("allgather: block %d is %d", r, v)
				}
			}
			return nil
		}},
		{"", func(o commtune.CollOption) error {
			big := make([]float64, 1024) // 8 KiB: beyond a slot
			return commtune.Allreduce(ctx, d, big, big, commtune.Sum, o)
		}},
	}
	for _, tc := range calls {
		var ch commtune.CollChoice
		if err := tc.call(commtune.WithChoice(&ch)); err != nil {
			return err
		}
		onSegment := strings.HasSuffix(ch.Algorithm, "/node-segment")
		if tc.want != "" && ch.Algorithm != tc.want || tc.want == "" && onSegment {
			return fmt.Errorf("ran %s, want %q (\"\": a family passing messages)", ch.Algorithm, tc.want)
		}
	}
	// Two Halos sharing a selection, exchanged in turn as a Jacobi
	// sweep does: the second one's first exchange is the first call on
	// its communicator, and the selection's agreements (collectives)
	// follow there. The segment is made by whichever call comes first.
	dims := make([]int, 1)
	if err := commtune.DimsCreate(n, dims); err != nil {
		return err
	}
	cart, err := d.Cart(dims, []bool{true})
	if err != nil {
		return err
	}
	var halos [2]*commtune.Halo
	for i := range halos {
		if halos[i], err = commtune.NewHalo(cart, make([]float64, 8+2), []int{8}, 1, 1); err != nil {
			return err
		}
	}
	timer, err := commtune.NewHaloTimer(halos[0], halos[1])
	if err != nil {
		return err
	}
	for i := range 20 {
		timer.Start()
		if err := halos[i%2].Exchange(ctx); err != nil {
			return fmt.Errorf("halo exchange: %w", err)
		}
		if err := timer.Stop(ctx); err != nil {
			return fmt.Errorf("halo timer: %w", err)
		}
	}
	parts, err := regionMappings()
	if err != nil {
		return err
	}
	if len(parts) < 2*n {
		return fmt.Errorf("%d region mappings, want at least the %d parts of two segments", len(parts), 2*n)
	}
	for _, p := range parts {
		if !strings.HasSuffix(p, "(deleted)") {
			return fmt.Errorf("a mapped region's file is still there: %s", p)
		}
	}
	if err := rootsDisagree(ctx, d); err != nil {
		return err
	}
	fmt.Printf("rank %d: %d calls checked, %d parts mapped, every file removed\n", me, len(calls), len(parts))
	return nil
}

// rootsDisagree makes a Bcast in which every rank of a Dup of c names
// itself the root: none reads another's part, so the call itself may
// return nil, but then the next call must fail with ErrSizeMismatch
// within a second (three under the race detector).
func rootsDisagree(ctx context.Context, c *commtune.Comm) error {
	d, err := c.Dup()
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Barrier(ctx); err != nil { // the segment is made
		return err
	}
	bound := conformance.MismatchBound
	if testenv.Race {
		bound *= 3
	}
	start := time.Now()
	err = commtune.Bcast(ctx, d, []int64{int64(d.Rank())}, d.Rank())
	if err == nil {
		err = d.Barrier(ctx)
	}
	switch took := time.Since(start); {
	case err == nil:
		return errors.New("every rank its own Bcast root: the call and the next one both returned nil")
	case !errors.Is(err, commtune.ErrSizeMismatch):
		return fmt.Errorf("every rank its own Bcast root: %w, want ErrSizeMismatch", err)
	case took > bound:
		return fmt.Errorf("every rank its own Bcast root: the error came after %v", took)
	}
	return nil
}

// regionMappings returns this process's mappings of region files, as
// /proc/self/maps names them (a removed file ends in " (deleted)").
func regionMappings() ([]string, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "/commtune-region-"); i >= 0 {
			name := line[strings.LastIndex(line[:i+1], " ")+1:]
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out, sc.Err()
}

// TestNodeSegment runs segmentJob on 3 processes over shared memory.
func TestNodeSegment(t *testing.T) {
	out, err := conformance.RunJob(3, "segment", "", "COMMTUNE_TRANSPORTS=shm,tcp")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Count(out, "every file removed") != 3 {
		t.Fatalf("not every rank reported:\n%s", out)
	}
	t.Log(out)
}
