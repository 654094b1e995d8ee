package collcall

import (
	"context"
	"testing"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
)

// TestEveryOperation: each operation's call, and its persistent form,
// runs on goroutine ranks, with no option and with an algorithm forced.
func TestEveryOperation(t *testing.T) {
	const n = 3
	for _, op := range coll.Operations {
		t.Run(string(op), func(t *testing.T) {
			size := Size(op, n, 1000)
			err := commtune.Local(n, func(c *commtune.Comm) error {
				call, err := New(op, n, c.Rank(), size)
				if err != nil {
					return err
				}
				if err := call(context.Background(), c, nil); err != nil {
					return err
				}
				forced := []commtune.CollOption{commtune.WithAlgorithm(coll.Algorithms(op)[0].Name())}
				if err := call(context.Background(), c, forced); err != nil {
					return err
				}
				// The persistent form, twice, as the table and forced.
				init, err := NewPersistent(op, n, c.Rank(), size)
				if err != nil {
					return err
				}
				for _, o := range [][]commtune.CollOption{nil, forced} {
					p, err := init(c, o)
					if err != nil {
						return err
					}
					for range 2 {
						if err := p.Start(); err != nil {
							return err
						}
						if _, err := p.Wait(context.Background()); err != nil {
							return err
						}
					}
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

func TestSize(t *testing.T) {
	for _, c := range []struct {
		op         coll.Operation
		n, in, out int
	}{
		{coll.OpBarrier, 4, 1000, 0},
		{coll.OpBcast, 4, 1001, 1001},
		{coll.OpAllreduce, 4, 1001, 1000},
		{coll.OpAllreduce, 4, 3, 8},
		{coll.OpReduceScatterBlock, 4, 100, 96},
		{coll.OpReduceScatterBlock, 4, 8, 32},
	} {
		if got := Size(c.op, c.n, c.in); got != c.out {
			t.Errorf("Size(%s, %d, %d) = %d, want %d", c.op, c.n, c.in, got, c.out)
		}
	}
	if got := EvenCounts(10, 4); got[0] != 3 || got[1] != 3 || got[2] != 2 || got[3] != 2 {
		t.Errorf("EvenCounts(10, 4) = %v", got)
	}
	if _, err := New("allsmash", 2, 0, 8); err == nil {
		t.Error("New of an unknown operation: no error")
	}
}
