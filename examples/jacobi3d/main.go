// Command jacobi3d solves −∇²u = 1 on a 3-D grid with u = 0 on its
// boundary by Jacobi iteration on the 7-point stencil, distributed over the
// ranks of a job as a DimsCreate × Cart grid of blocks: per iteration a
// halo exchange and an allreduce of the residual. Run it under the
// launcher:
//
//	go build -o /tmp/jacobi3d ./examples/jacobi3d
//	go run ./cmd/commtune run -n 8 -- /tmp/jacobi3d -grid 32x32x32 -iters 100
//
// It checks its answer against one rank: every rank also runs the same
// iteration on the whole grid alone and compares its block bit for bit
// (each cell adds the same operands in the same order either way), and
// the ranks agree on the count of differing cells with an allreduce.
// Without the launcher it runs as a single rank.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/commtune/commtune"
)

func main() {
	gridFlag := flag.String("grid", "32x32x32", "global interior cells, XxYxZ")
	iters := flag.Int("iters", 100, "Jacobi iterations")
	impl := flag.String("impl", "", "halo exchange implementation, or the selector learn, brute or hypothesis (default: the library's, "+commtune.EnvHaloSelect+"); implementations: "+strings.Join(commtune.HaloImpls(), ", "))
	check := flag.Bool("check", true, "compare the answer with the same iteration on one rank")
	explain := flag.Bool("explain", false, "print how the halo implementation was selected, one line per event")
	timing := flag.Bool("timing", false, "each rank prints the time it measured around its halo exchanges and allreduces (to set beside a COMMTUNE_TRACE report)")
	flag.Parse()
	grid, err := parseGrid(*gridFlag)
	if err != nil || *iters < 1 {
		fmt.Fprintf(os.Stderr, "jacobi3d: want -grid like 32x32x32 and -iters ≥ 1 (%v)\n", err)
		os.Exit(2)
	}
	if err := run(grid, *iters, *impl, *check, *explain, *timing); err != nil {
		fmt.Fprintln(os.Stderr, "jacobi3d:", err)
		os.Exit(1)
	}
}

// parseGrid reads "XxYxZ" into three positive extents.
func parseGrid(s string) ([3]int, error) {
	var g [3]int
	parts := strings.Split(s, "x")
	if len(parts) != 3 {
		return g, fmt.Errorf("grid %q: want three extents like 32x32x32", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return g, fmt.Errorf("grid %q: extent %q is not a positive whole number", s, p)
		}
		g[i] = n
	}
	return g, nil
}

// callTimes is what a rank measured around its own calls (-timing).
type callTimes struct {
	exchanges, allreduces   int
	inExchange, inAllreduce time.Duration
}

// timed runs f and adds its time to *total.
func timed(total *time.Duration, f func() error) error {
	t0 := time.Now()
	err := f()
	*total += time.Since(t0)
	return err
}

func run(grid [3]int, iters int, impl string, check, explain, timing bool) error {
	ctx := context.Background()
	c, err := commtune.Init(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	dims := []int{0, 0, 0}
	if err := commtune.DimsCreate(c.Size(), dims); err != nil {
		return err
	}
	for d := range 3 {
		if dims[d] > grid[d] {
			return fmt.Errorf("%d ranks as %v blocks: dimension %d has %d cells, fewer than blocks", c.Size(), dims, d, grid[d])
		}
	}
	cart, err := c.Cart(dims, []bool{false, false, false})
	if err != nil {
		return err
	}
	coords := cart.MyCoords()
	var b block
	for d := range 3 {
		b.ext[d], b.off[d] = split(grid[d], dims[d], coords[d])
	}
	// Two arrays, halo width 1, zero everywhere: the halo at the grid's
	// boundary stays zero (u = 0 there), the rest is exchanged.
	u, v := make([]float64, b.cells()), make([]float64, b.cells())
	var opts []commtune.HaloOption
	switch impl {
	case "":
	case commtune.HaloSelectLearn, commtune.HaloSelectBrute, commtune.HaloSelectHypothesis:
		opts = append(opts, commtune.WithHaloSelect(impl))
	default:
		opts = append(opts, commtune.WithHaloImpl(impl))
	}
	hu, err := commtune.NewHalo(cart, u, b.ext[:], 1, 1, opts...)
	if err != nil {
		return err
	}
	hv, err := commtune.NewHalo(cart, v, b.ext[:], 1, 1, opts...)
	if err != nil {
		return err
	}
	// The two Halos have one shape on one Cart, so they share one
	// selection; the Timer has it judge whole iterations, computation
	// included, rather than the exchanges alone.
	timer, err := commtune.NewHaloTimer(hu, hv)
	if err != nil {
		return err
	}
	src := source(grid)
	start := time.Now()
	var residual float64
	var times callTimes
	cur, next, hcur, hnext := u, v, hu, hv
	for range iters {
		timer.Start()
		if err := timed(&times.inExchange, func() error { return hcur.Exchange(ctx) }); err != nil {
			return err
		}
		times.exchanges++
		local := []float64{sweep(b, cur, next, src)}
		if err := timed(&times.inAllreduce, func() error { return commtune.Allreduce(ctx, c, local, local, commtune.Sum) }); err != nil {
			return err
		}
		times.allreduces++
		if err := timer.Stop(ctx); err != nil {
			return err
		}
		residual = math.Sqrt(local[0])
		cur, next, hcur, hnext = next, cur, hnext, hcur
	}
	elapsed := time.Since(start)

	status := "not checked"
	if check {
		whole, want := reference(grid, iters, src)
		diff := []int64{int64(compare(b, cur, whole, want))}
		if err := timed(&times.inAllreduce, func() error { return commtune.Allreduce(ctx, c, diff, diff, commtune.Sum) }); err != nil {
			return err
		}
		times.allreduces++
		if diff[0] != 0 {
			return fmt.Errorf("%d cells differ from the one-rank answer", diff[0])
		}
		status = "same as one rank"
	}
	if timing {
		fmt.Printf("jacobi3d timing: rank %d HaloExchange %d calls %d ns, Allreduce %d calls %d ns\n",
			c.Rank(), times.exchanges, times.inExchange.Nanoseconds(), times.allreduces, times.inAllreduce.Nanoseconds())
	}
	if c.Rank() == 0 {
		fmt.Printf("jacobi3d: %d ranks as %dx%dx%d blocks, grid %dx%dx%d, %d iterations in %v (halo %s): residual %.6e, %s\n",
			c.Size(), dims[0], dims[1], dims[2], grid[0], grid[1], grid[2], iters, elapsed.Round(time.Millisecond), haloChoice(hu.Selection()), residual, status)
		if explain {
			for _, line := range hu.Selection().Explain {
				fmt.Println("  " + line)
			}
		}
	}
	return nil
}

// haloChoice says which implementation the exchanges ended on, and how.
func haloChoice(s commtune.HaloSelection) string {
	switch {
	case s.Method == "fixed":
		return s.Impl + ", fixed"
	case s.Exploring:
		return fmt.Sprintf("%s still selecting, %d iterations measured", s.Method, s.Calls)
	case s.Calls == 0:
		return fmt.Sprintf("%s, saved by an earlier run: no exploration", s.Impl)
	}
	return fmt.Sprintf("%s, chosen by %s after %d iterations, %d selection(s)", s.Impl, s.Method, s.Calls, s.Selections)
}

// split returns the extent and offset of block i of n blocks over cells
// cells: the first cells%n blocks hold one cell more. Neighbouring blocks
// thus agree on the faces they share.
func split(cells, n, i int) (ext, off int) {
	base, rem := cells/n, cells%n
	ext = base
	if i < rem {
		ext++
	}
	return ext, i*base + min(i, rem)
}

// block is one rank's part of the grid: its interior extents and the
// global index of its first interior cell, per dimension.
type block struct {
	ext, off [3]int
}

// cells is the size of the block's array, halo of width 1 included.
func (b block) cells() int { return (b.ext[0] + 2) * (b.ext[1] + 2) * (b.ext[2] + 2) }

// at is the index in the block's array of interior cell (i, j, k),
// counted from 0 in the interior.
func (b block) at(i, j, k int) int {
	return ((i+1)*(b.ext[1]+2)+j+1)*(b.ext[2]+2) + k + 1
}

// source is h²·f for f = 1, h the spacing of the largest extent.
func source(grid [3]int) float64 {
	h := 1 / float64(max(grid[0], grid[1], grid[2])+1)
	return h * h
}

// sweep writes one Jacobi iteration of cur's interior into next's and
// returns the sum of the squared changes.
func sweep(b block, cur, next []float64, src float64) float64 {
	sy, sx := b.ext[2]+2, (b.ext[1]+2)*(b.ext[2]+2)
	var sum float64
	for i := range b.ext[0] {
		for j := range b.ext[1] {
			for k := range b.ext[2] {
				p := b.at(i, j, k)
				x := (cur[p-sx] + cur[p+sx] + cur[p-sy] + cur[p+sy] + cur[p-1] + cur[p+1] + src) / 6
				d := x - cur[p]
				sum += d * d
				next[p] = x
			}
		}
	}
	return sum
}

// reference runs the iteration on the whole grid on this rank alone.
func reference(grid [3]int, iters int, src float64) (block, []float64) {
	b := block{ext: grid}
	cur, next := make([]float64, b.cells()), make([]float64, b.cells())
	for range iters {
		sweep(b, cur, next, src)
		cur, next = next, cur
	}
	return b, cur
}

// compare counts the cells of b's interior in mine that differ from the
// same cells of the whole-grid answer.
func compare(b block, mine []float64, whole block, want []float64) int {
	n := 0
	for i := range b.ext[0] {
		for j := range b.ext[1] {
			for k := range b.ext[2] {
				if mine[b.at(i, j, k)] != want[whole.at(b.off[0]+i, b.off[1]+j, b.off[2]+k)] {
					n++
				}
			}
		}
	}
	return n
}
