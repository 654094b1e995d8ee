package conformance

import (
	"context"
	"fmt"
	"slices"

	"github.com/commtune/commtune"
)

// neighbors checks the neighbourhood collectives: on periodic and open
// Carts (repeated neighbours at extent 1 and 2, ProcNull at the borders),
// and on a Neighborhood listing one rank twice and a ProcNull; blocking
// and nonblocking, plain and v forms.
func neighbors(ctx context.Context, c *commtune.Comm) error {
	n, me := c.Size(), c.Rank()
	for _, periodic := range []bool{true, false} {
		dims := []int{0, 0}
		if err := commtune.DimsCreate(n, dims); err != nil {
			return err
		}
		cart, err := c.Cart(dims, []bool{periodic, periodic})
		if err != nil {
			return err
		}
		nb := cart.Neighborhood()
		src := cart.Neighbors() // sources = dests = the face neighbours
		k := len(src)
		got := slices.Repeat([]int64{-1}, k)
		q, err := commtune.IneighborAllgather(nb, []int64{int64(me)}, got)
		if err != nil {
			return err
		}
		if err := q.Wait(ctx); err != nil {
			return err
		}
		for i, s := range src {
			if want := int64(s); s == commtune.ProcNull && got[i] != -1 || s != commtune.ProcNull && got[i] != want {
				return fmt.Errorf("cart %v periodic %v: allgather block %d from %d holds %d", dims, periodic, i, s, got[i])
			}
		}
		// Block j goes toward slot j; source slot i sent it from i^1.
		send := make([]int64, k)
		for j := range send {
			send[j] = int64(me*100 + j)
		}
		got = slices.Repeat([]int64{-1}, k)
		if err := commtune.NeighborAlltoall(ctx, nb, send, got); err != nil {
			return err
		}
		for i, s := range src {
			want := int64(-1)
			if s != commtune.ProcNull {
				want = int64(s*100 + (i ^ 1))
			}
			if got[i] != want {
				return fmt.Errorf("cart %v periodic %v: alltoall block %d from %d holds %d, want %d", dims, periodic, i, s, got[i], want)
			}
		}
		if err := cart.Comm().Close(); err != nil {
			return err
		}
	}
	return neighborhoodRepeats(ctx, c)
}

// neighborhoodRepeats: every rank sends to the next one twice and to
// ProcNull, and receives from the previous one twice and from ProcNull;
// blocks of different sizes (the v forms) match in list order.
func neighborhoodRepeats(ctx context.Context, c *commtune.Comm) error {
	n, me := c.Size(), c.Rank()
	next, prev := (me+1)%n, (me+n-1)%n
	nb, err := c.Neighborhood([]int{prev, commtune.ProcNull, prev}, []int{next, next, commtune.ProcNull})
	if err != nil {
		return err
	}
	defer nb.Comm().Close()
	// Destination j gets j+1 elements of value me*10+j.
	send := []int32{int32(me * 10), int32(me*10 + 1), int32(me*10 + 1), 99}
	sc, sd := []int{1, 2, 1}, []int{0, 1, 3}
	got := slices.Repeat([]int32{-1}, 5)
	rc, rd := []int{1, 2, 2}, []int{0, 1, 3} // slot 1 is ProcNull: untouched
	if err := commtune.NeighborAlltoallv(ctx, nb, send, sc, sd, got, rc, rd); err != nil {
		return err
	}
	want := []int32{int32(prev * 10), -1, -1, int32(prev*10 + 1), int32(prev*10 + 1)}
	if !slices.Equal(got, want) {
		return fmt.Errorf("alltoallv with repeats: %v, want %v", got, want)
	}
	all := slices.Repeat([]float64{-1}, 6)
	if err := commtune.NeighborAllgatherv(ctx, nb, []float64{float64(me), 0.5}, all, []int{2, 0, 2}, []int{0, 2, 4}); err != nil {
		return err
	}
	if w := []float64{float64(prev), 0.5, -1, -1, float64(prev), 0.5}; !slices.Equal(all, w) {
		return fmt.Errorf("allgatherv with repeats: %v, want %v", all, w)
	}
	if err := commtune.NeighborAlltoall(ctx, nb, []int32{1, 2, 3}, make([]int32, 2)); err == nil {
		return fmt.Errorf("alltoall with unequal blocks accepted")
	}
	return nil
}
