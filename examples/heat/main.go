// Command heat relaxes a 1-D temperature profile split among the ranks, as
// a Go program would write it with commtune's higher-level calls:
//
//   - the ranks of a node share one copy of a coefficient table
//     (SplitShared, AllocShared), written once by the node's first rank;
//
//   - each step trades edge values with the two neighbours on a periodic
//     ring (NeighborAllgather on a Cart);
//
//   - at the end every rank's summary, a struct with a string in it, is
//     gathered as a value (GatherValues) and printed by rank 0.
//
//     go build -o /tmp/heat ./examples/heat
//     go run ./cmd/commtune run -n 4 -- /tmp/heat
//     mpiexec.mpich -n 4 /tmp/heat
//
// It exits non-zero if the relaxation does not conserve the total heat.
package main

import (
	"context"
	"fmt"
	"math"
	"os"

	"github.com/commtune/commtune"
)

// points per rank, steps, and the table's length.
const (
	points = 1 << 12
	steps  = 200
	table  = 1 << 10
)

// summary is what each rank reports: a value with a string in it, sent
// through encoding/gob.
type summary struct {
	Rank     int
	Host     string
	Min, Max float64
	Sum      float64
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "heat:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	c, err := commtune.Init(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	me, n := c.Rank(), c.Size()

	// One coefficient table per node, written by its first rank.
	node, err := c.SplitShared(ctx)
	if err != nil {
		return err
	}
	size := 0
	if node.Rank() == 0 {
		size = 8 * table
	}
	reg, err := node.AllocShared(ctx, size)
	if err != nil {
		return err
	}
	if node.Rank() == 0 {
		coef := commtune.SharedPart[float64](reg, 0)
		for i := range coef {
			coef[i] = 0.25 * (1 + 0.5*math.Sin(float64(i)))
		}
	}
	if err := node.Barrier(ctx); err != nil { // the table is written
		return err
	}
	coef := commtune.SharedPart[float64](reg, 0)

	// The ring of ranks and the local profile: a hot spot on rank 0.
	ring, err := c.Cart([]int{n}, []bool{true})
	if err != nil {
		return err
	}
	nb := ring.Neighborhood()
	u := make([]float64, points+2) // with a ghost cell at each end
	if me == 0 {
		u[1] = float64(points)
	}
	var before float64
	for _, v := range u[1 : points+1] {
		before += v
	}
	next := make([]float64, len(u))
	edges := make([]float64, 4) // each neighbour's two edge values
	// k is the coefficient of the flux between global points g and g+1:
	// both ranks of an edge compute it alike, so heat is conserved.
	k := func(g int) float64 { return coef[((g%table)+table)%table] }
	for s := 0; s < steps; s++ {
		// Both neighbours get both edges: from the left one (block 0) its
		// right edge is this rank's left ghost, from the right one (block
		// 1) its left edge the right ghost.
		if err := commtune.NeighborAllgather(ctx, nb, []float64{u[1], u[points]}, edges); err != nil {
			return err
		}
		u[0], u[points+1] = edges[1], edges[2]
		base := me*points - 1 // global index of u[0]
		for i := 1; i <= points; i++ {
			in := k(base+i-1) * (u[i-1] - u[i])
			out := k(base+i) * (u[i] - u[i+1])
			next[i] = u[i] + in - out
		}
		u, next = next, u
	}

	mine := summary{Rank: me, Min: math.Inf(1), Max: math.Inf(-1)}
	mine.Host, _ = os.Hostname()
	for _, v := range u[1 : points+1] {
		mine.Min, mine.Max = min(mine.Min, v), max(mine.Max, v)
		mine.Sum += v
	}
	all, err := commtune.GatherValues(ctx, c, mine, 0)
	if err != nil {
		return err
	}
	total, err := commtune.ReduceValue(ctx, c, before, func(a, b float64) float64 { return a + b }, 0)
	if err != nil {
		return err
	}
	if me != 0 {
		return reg.Close()
	}
	var after float64
	for _, s := range all {
		fmt.Printf("rank %d on %s: min %.3g max %.3g sum %.6g\n", s.Rank, s.Host, s.Min, s.Max, s.Sum)
		after += s.Sum
	}
	fmt.Printf("%d ranks, %d steps: total heat %.6g, at the start %.6g\n", n, steps, after, total)
	if math.Abs(after-total) > 1e-9*total {
		return fmt.Errorf("total heat %.12g after %d steps, %.12g before", after, steps, total)
	}
	return reg.Close()
}
