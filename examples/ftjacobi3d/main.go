// Command ftjacobi3d is the Jacobi solver of examples/jacobi3d made to
// survive ranks that die: it solves −∇²u = 1 on a 3-D grid with u = 0 on
// its boundary by Jacobi iteration on the 7-point stencil, over a
// DimsCreate × Cart grid of blocks with a halo exchange per iteration,
// and when ranks are lost the survivors roll back to the last checkpoint,
// spread the grid over themselves and finish.
//
//	go build -o /tmp/ftjacobi3d ./examples/ftjacobi3d
//	go run ./cmd/commtune run --keep-going -n 8 -- /tmp/ftjacobi3d -iters 60 -kill 2,3 -kill-at 25
//
// The lowest surviving rank prints a checksum of the final grid (FNV-1a of
// the bits of every value, in global index order), the same with or
// without losses: a cell's update adds the same operands in the same order
// whatever block holds it, so the values do not depend on the
// decomposition.
//
// Checkpoints live in memory. Every -checkpoint iterations each rank sends
// a copy of its block to its -buddies buddies, the next ranks of the
// communicator (r+1, r+2 … wrapping), and the ranks Agree that every copy
// arrived; only then does the checkpoint replace the previous one. When a
// rank is lost, the survivors' calls fail (ErrPeerLost, or ErrRevoked once
// one of them revoked); each revokes the communicator, joins the Agree of
// the checkpoint in progress with 0, and shrinks the communicator to the
// survivors. On the new one, rank 0 gathers every survivor's copies — its
// own block and its buddies' — assembles the global grid of the last
// checkpoint, and broadcasts it; each rank takes its block of the new
// decomposition (DimsCreate over the new size) and the iteration goes on
// from the checkpoint, which the survivors first take anew among
// themselves. Gathering the whole grid at one rank and broadcasting it is
// the simplest redistribution, fine for an example; a large grid would
// move only the blocks that change owner. A rank lost during recovery
// makes the survivors shrink again, from the same checkpoint.
//
// The limit: a block is lost for good if its rank and all its buddies die
// before the next checkpoint — with -buddies 2, three consecutive ranks
// (r, r+1, r+2 modulo the size). Any two losses are recovered. The
// survivors then say which blocks were lost and exit non-zero.
//
// -kill lists world ranks that end themselves with SIGKILL at the start of
// iteration -kill-at (or earlier, as soon as they see another rank lost),
// and -kill-in-recovery ranks that do so in the first recovery, once it
// shrank the communicator with them in it; the launcher must then let the
// others go on (commtune run --keep-going).
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/examples/internal/ftkit"
)

func main() {
	gridFlag := flag.String("grid", "24x24x24", "global interior cells, XxYxZ")
	iters := flag.Int("iters", 60, "Jacobi iterations")
	every := flag.Int("checkpoint", 10, "iterations between checkpoints")
	buddies := flag.Int("buddies", 2, "ranks that keep a copy of each rank's block")
	kill := flag.String("kill", "", "world ranks that SIGKILL themselves, comma-separated (e.g. 2,3)")
	killAt := flag.Int("kill-at", 25, "iteration at whose start the -kill ranks die")
	killRecovering := flag.String("kill-in-recovery", "", "world ranks that SIGKILL themselves in the first recovery, right after it shrank the communicator")
	flag.Parse()
	grid, err := parseGrid(*gridFlag)
	if err == nil {
		err = checkFlags(*iters, *every, *buddies)
	}
	var victims, recoveryVictims []int
	if err == nil {
		victims, err = ftkit.ParseRanks(*kill)
	}
	if err == nil {
		recoveryVictims, err = ftkit.ParseRanks(*killRecovering)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ftjacobi3d:", err)
		os.Exit(2)
	}
	cfg := config{grid: grid, iters: *iters, every: *every, buddies: *buddies, victims: victims, killAt: *killAt, recoveryVictims: recoveryVictims}
	if err := ftkit.InitAndRun(slices.Concat(cfg.victims, cfg.recoveryVictims), func(ctx context.Context, world *commtune.Comm) error {
		return run(ctx, world, cfg)
	}); err != nil {
		fmt.Fprintln(os.Stderr, "ftjacobi3d:", err)
		os.Exit(1)
	}
}

func checkFlags(iters, every, buddies int) error {
	switch {
	case iters < 1:
		return fmt.Errorf("-iters %d: want at least 1", iters)
	case every < 1:
		return fmt.Errorf("-checkpoint %d: want at least 1", every)
	case buddies < 1:
		return fmt.Errorf("-buddies %d: want at least 1", buddies)
	}
	return nil
}

// parseGrid reads "XxYxZ" into three positive extents.
func parseGrid(s string) ([3]int, error) {
	var g [3]int
	parts := strings.Split(s, "x")
	if len(parts) != 3 {
		return g, fmt.Errorf("-grid %q: want three extents like 24x24x24", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return g, fmt.Errorf("-grid %q: extent %q is not a positive whole number", s, p)
		}
		g[i] = n
	}
	return g, nil
}

type config struct {
	grid                  [3]int
	iters, every, buddies int
	victims               []int // world ranks that kill themselves
	killAt                int   // … at the start of this iteration
	recoveryVictims       []int // world ranks that kill themselves in the first recovery
}

// errLost says that the communicator lost a rank and the survivors agreed
// to recover.
var errLost = errors.New("a rank was lost")

// run iterates on world, and after every loss on the survivors, until the
// grid is done; the lowest survivor prints its checksum.
func run(ctx context.Context, world *commtune.Comm, cfg config) error {
	s := &solver{cfg: cfg, world: world, victim: slices.Contains(cfg.victims, world.Rank())}
	cur := world
	for recovery := 0; ; recovery++ {
		cart, err := cartOf(cur, cfg.grid)
		if err != nil {
			return err
		}
		err = s.epoch(ctx, cart, recovery > 0)
		if !errors.Is(err, errLost) {
			return err
		}
		d, err := cart.Comm().Shrink(ctx)
		if err != nil {
			return fmt.Errorf("shrinking after a loss: %w", err)
		}
		if cur != world {
			cur.Close()
		}
		cart.Comm().Close()
		cur = d
		if recovery == 0 && slices.Contains(cfg.recoveryVictims, world.Rank()) {
			s.die() // the others are about to restore the checkpoint with this rank
		}
	}
}

// cartOf lays c's ranks out as a Cart of blocks over grid. It needs no
// communication, so a survivor never waits in it.
func cartOf(c *commtune.Comm, grid [3]int) (*commtune.Cart, error) {
	dims := []int{0, 0, 0}
	if err := commtune.DimsCreate(c.Size(), dims); err != nil {
		return nil, err
	}
	for d := range 3 {
		if dims[d] > grid[d] {
			return nil, fmt.Errorf("%d ranks as %v blocks: dimension %d has %d cells, fewer than blocks", c.Size(), dims, d, grid[d])
		}
	}
	return c.Cart(dims, []bool{false, false, false})
}

// A Piece is a block of the grid at a checkpoint: the interior cells of
// the block of rank Owner of the decomposition over P ranks.
type Piece struct {
	Owner, P, Iter int
	Off, Ext       [3]int
	Data           []float64
}

// Held is what a rank holds of the last checkpoint every rank agreed on:
// its own block and copies of its buddies'.
type Held struct {
	Pieces []Piece
}

// Restored is the grid of the last checkpoint as rank 0 assembled it,
// with the owners whose blocks nobody held.
type Restored struct {
	Iter    int
	Missing []int
	Grid    []float64
}

// solver is one rank's state across recoveries.
type solver struct {
	cfg    config
	world  *commtune.Comm
	victim bool
	held   Held // the last agreed checkpoint
}

// die ends a -kill rank as a crash would: no goodbye.
func (s *solver) die() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
}

// fail turns err, a call's failure on c, into errLost after telling the
// others (Revoke) and joining the pending agreement with 0, so that every
// survivor recovers; any other error is returned as it is.
func (s *solver) fail(ctx context.Context, c *commtune.Comm, what string, err error) error {
	if !ftkit.Lost(err) {
		return fmt.Errorf("%s: %w", what, err)
	}
	if s.victim {
		s.die()
	}
	if err := c.Revoke(); err != nil {
		return err
	}
	if _, err := c.Agree(ctx, 0); err != nil && !ftkit.Lost(err) {
		return fmt.Errorf("%s: agreeing after a loss: %w", what, err)
	}
	return errLost
}

// agree has the ranks of c agree that each did its part; errLost if one
// did not or was lost.
func (s *solver) agree(ctx context.Context, c *commtune.Comm, what string) error {
	v, err := c.Agree(ctx, 1)
	if err != nil && !ftkit.Lost(err) {
		return fmt.Errorf("%s: agreeing: %w", what, err)
	}
	if err == nil && v == 1 {
		return nil
	}
	if s.victim {
		s.die()
	}
	if err := c.Revoke(); err != nil {
		return err
	}
	return errLost
}

// epoch runs the iteration on cart's communicator from the start, or
// after a loss from the last checkpoint, to the end.
func (s *solver) epoch(ctx context.Context, cart *commtune.Cart, restore bool) error {
	c := cart.Comm()
	cfg := s.cfg
	b := blockOf(cart, c.Rank(), cfg.grid)
	u, v := make([]float64, b.cells()), make([]float64, b.cells())
	t := 0
	if restore {
		r, err := s.restore(ctx, c)
		if err != nil {
			return s.fail(ctx, c, "restoring the checkpoint", err)
		}
		if len(r.Missing) > 0 {
			return fmt.Errorf("cannot recover: the blocks of ranks %v of the last checkpoint died with all %d of their buddies", r.Missing, cfg.buddies)
		}
		b.unpack(u, r.Grid, cfg.grid)
		t = r.Iter
		if c.Rank() == 0 {
			fmt.Printf("recovered on %d ranks (world %v) as %v blocks: back to iteration %d\n", c.Size(), ftkit.Members(c), cart.Dims(), t)
		}
	}
	hu, err := commtune.NewHalo(cart, u, b.ext[:], 1, 1)
	if err != nil {
		return err
	}
	hv, err := commtune.NewHalo(cart, v, b.ext[:], 1, 1)
	if err != nil {
		return err
	}
	src := source(cfg.grid)
	cur, next, hcur, hnext := u, v, hu, hv
	for ; ; t++ {
		if t%cfg.every == 0 {
			if err := s.checkpoint(ctx, cart, b, cur, t); err != nil {
				return err
			}
		}
		if t == cfg.iters {
			break
		}
		if s.victim && t == cfg.killAt {
			s.die()
		}
		if err := hcur.Exchange(ctx); err != nil {
			return s.fail(ctx, c, fmt.Sprintf("iteration %d: halo exchange", t), err)
		}
		sweep(b, cur, next, src)
		cur, next, hcur, hnext = next, cur, hnext, hcur
	}
	// The answer: the whole grid at rank 0, once every rank has sent its
	// block.
	mine := Held{Pieces: []Piece{b.piece(c.Rank(), c.Size(), t, cur)}}
	all, err := commtune.GatherValues(ctx, c, mine, 0)
	if err != nil {
		return s.fail(ctx, c, "gathering the answer", err)
	}
	if err := s.agree(ctx, c, "gathering the answer"); err != nil {
		return err
	}
	if c.Rank() == 0 {
		r := assemble(all, cfg.grid)
		if len(r.Missing) > 0 {
			return fmt.Errorf("the answer lacks the blocks of ranks %v", r.Missing)
		}
		var lostRanks []int
		for w := range s.world.Size() {
			if !slices.Contains(ftkit.Members(c), w) {
				lostRanks = append(lostRanks, w)
			}
		}
		fmt.Printf("checksum %016x after %d iterations on %dx%dx%d, lost ranks %v, survivors %d\n",
			checksum(r.Grid), t, cfg.grid[0], cfg.grid[1], cfg.grid[2], lostRanks, c.Size())
	}
	return nil
}

// checkpoint sends a copy of the block to each buddy and receives theirs,
// and makes them the checkpoint to return to once every rank agrees it
// has its copies.
func (s *solver) checkpoint(ctx context.Context, cart *commtune.Cart, b block, u []float64, t int) error {
	c := cart.Comm()
	me, p := c.Rank(), c.Size()
	next := Held{Pieces: []Piece{b.piece(me, p, t, u)}}
	var reqs []*commtune.Request
	for k := 1; k <= min(s.cfg.buddies, p-1); k++ {
		from := (me - k + p) % p
		theirs := blockOf(cart, from, s.cfg.grid).piece(from, p, t, nil)
		next.Pieces = append(next.Pieces, theirs)
		rq, err := commtune.IrecvSlice(c, theirs.Data, from, copyTag+k)
		if err != nil {
			return s.fail(ctx, c, fmt.Sprintf("iteration %d: checkpoint", t), err)
		}
		sq, err := commtune.IsendSlice(c, next.Pieces[0].Data, (me+k)%p, copyTag+k)
		if err != nil {
			return s.fail(ctx, c, fmt.Sprintf("iteration %d: checkpoint", t), err)
		}
		reqs = append(reqs, rq, sq)
	}
	if _, err := commtune.WaitAll(ctx, reqs...); err != nil {
		return s.fail(ctx, c, fmt.Sprintf("iteration %d: checkpoint", t), err)
	}
	if err := s.agree(ctx, c, fmt.Sprintf("iteration %d: checkpoint", t)); err != nil {
		return err
	}
	s.held = next
	return nil
}

// copyTag (+k) tags the copies for the k-th buddy.
const copyTag = 7000

// restore rebuilds the grid of the last checkpoint on the survivors:
// rank 0 gathers what each holds and broadcasts the assembled grid.
func (s *solver) restore(ctx context.Context, c *commtune.Comm) (Restored, error) {
	all, err := commtune.GatherValues(ctx, c, s.held, 0)
	if err != nil {
		return Restored{}, err
	}
	var r Restored
	if c.Rank() == 0 {
		r = assemble(all, s.cfg.grid)
	}
	return commtune.BcastValue(ctx, c, r, 0)
}

// assemble lays the pieces out as the global grid, and names the owners
// of a decomposition none of whose pieces arrived. The pieces are of one
// checkpoint (one decomposition), which the agreement made the same on
// every rank.
func assemble(held []Held, grid [3]int) Restored {
	r := Restored{Grid: make([]float64, grid[0]*grid[1]*grid[2])}
	have := map[int]bool{}
	p := 0
	for _, h := range held {
		for _, pc := range h.Pieces {
			if have[pc.Owner] {
				continue
			}
			have[pc.Owner] = true
			p, r.Iter = pc.P, pc.Iter
			block{ext: pc.Ext, off: pc.Off}.place(r.Grid, pc.Data, grid)
		}
	}
	for o := range p {
		if !have[o] {
			r.Missing = append(r.Missing, o)
		}
	}
	return r
}

// checksum is FNV-1a over the bits of every value of the grid in global
// index order: equal only for grids equal bit for bit.
func checksum(g []float64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, x := range g {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		h.Write(b[:])
	}
	return h.Sum64()
}
