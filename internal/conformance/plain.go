package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/commtune/commtune"
)

// atom is a plain struct: numbers and an array of them, no pointer.
type atom struct {
	X, Y   float64
	Charge int32
	Kind   [2]uint8
}

func atomOf(rank, i int) atom {
	return atom{X: float64(rank), Y: float64(i), Charge: int32(rank*100 + i), Kind: [2]uint8{uint8(rank), uint8(i)}}
}

// plainStructs: slices of plain structs as elements, point to point and in
// the collectives that move data, and reduced with a user operation; a
// type with a pointer in it, or a predefined operation on a struct, is a
// clear error before anything moves.
func plainStructs(ctx context.Context, c *commtune.Comm) error {
	n, me := c.Size(), c.Rank()
	root := n - 1
	// Bcast.
	b := make([]atom, 3)
	if me == root {
		for i := range b {
			b[i] = atomOf(root, i)
		}
	}
	if err := commtune.Bcast(ctx, c, b, root); err != nil {
		return err
	}
	for i, a := range b {
		if a != atomOf(root, i) {
			return fmt.Errorf("bcast element %d: %+v", i, a)
		}
	}
	// Allgather and Alltoall.
	all := make([]atom, n)
	if err := commtune.Allgather(ctx, c, []atom{atomOf(me, 0)}, all); err != nil {
		return err
	}
	for r, a := range all {
		if a != atomOf(r, 0) {
			return fmt.Errorf("allgather from %d: %+v", r, a)
		}
	}
	send, recv := make([]atom, n), make([]atom, n)
	for d := range send {
		send[d] = atomOf(me, d)
	}
	if err := commtune.Alltoall(ctx, c, send, recv); err != nil {
		return err
	}
	for s, a := range recv {
		if a != atomOf(s, me) {
			return fmt.Errorf("alltoall from %d: %+v", s, a)
		}
	}
	// Gatherv: rank r gives r+1 atoms.
	mine := make([]atom, me+1)
	for i := range mine {
		mine[i] = atomOf(me, i)
	}
	var got []atom
	var counts, displs []int
	if me == root {
		for r := 0; r < n; r++ {
			counts, displs = append(counts, r+1), append(displs, len(got))
			got = append(got, make([]atom, r+1)...)
		}
	}
	if err := commtune.Gatherv(ctx, c, mine, got, counts, displs, root); err != nil {
		return err
	}
	if me == root {
		for r := 0; r < n; r++ {
			for i := 0; i <= r; i++ {
				if a := got[displs[r]+i]; a != atomOf(r, i) {
					return fmt.Errorf("gatherv from %d, element %d: %+v", r, i, a)
				}
			}
		}
	}
	// A user reduction: the atom with the largest charge, its X summed.
	op := commtune.NewOp("heaviest", func(a, b atom) atom {
		m := a
		if b.Charge > a.Charge {
			m = b
		}
		m.X = a.X + b.X
		return m
	}, true)
	red := make([]atom, 1)
	if err := commtune.Allreduce(ctx, c, []atom{atomOf(me, 7)}, red, op); err != nil {
		return err
	}
	if want := float64(n * (n - 1) / 2); red[0].Charge != int32((n-1)*100+7) || red[0].X != want {
		return fmt.Errorf("allreduce of atoms: %+v", red[0])
	}
	// Point to point.
	if n > 1 {
		if me == 0 {
			if err := commtune.SendSlice(ctx, c, b, 1, 5); err != nil {
				return err
			}
		}
		if me == 1 {
			in := make([]atom, 3)
			if _, err := commtune.RecvSlice(ctx, c, in, 0, 5); err != nil {
				return err
			}
			if !slices.Equal(in, b) {
				return fmt.Errorf("recvslice: %+v", in)
			}
		}
	}
	// Refused before anything moves, on every rank alike.
	type named struct{ Name string }
	if err := commtune.Bcast(ctx, c, []named{{"x"}}, 0); err == nil || !strings.Contains(err.Error(), "not a plain type") {
		return fmt.Errorf("bcast of a struct with a string: %v", err)
	}
	if err := commtune.Allreduce(ctx, c, []atom{{}}, make([]atom, 1), commtune.Sum); err == nil {
		return fmt.Errorf("sum of atoms accepted")
	}
	return nil
}
