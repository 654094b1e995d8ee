package sample

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/collcall"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/stats"
	"github.com/commtune/commtune/internal/units"
)

// The collective table pass (seed 000's sampling applied to seed 001's
// families): every rank of a node times each operation's algorithms as
// programs call them — back to back, each block's figure the mean call on
// its slowest rank — at a ladder of sizes, and keeps per size the fastest
// and its nearest rivals (profile.CollTable). Every rank learns each
// block's figure from the same Allreduce, so all of them make the same
// decisions (which algorithms to time again) without another message.
//
// A size is timed in two stages: two blocks of every algorithm, the
// quicker counting (the screen), then rounds in which the fastest few and
// those within tableScreen of the fastest each run a block in turn. This machine drifts: the same algorithm's block
// moved by a third from one round to the next, more than algorithms
// differ near a crossing. So the rounds compare algorithms pairwise, each
// block against the leader's in the same round, and drop an algorithm once
// it ran slower than the leader in most rounds; they end when one is left
// or at tableRounds. Clear sizes cost a few rounds, close ones many, which
// is where a wrong choice is likely; algorithms still together at the end
// are within the noise of each other.

// TableOps are the operations the pass samples; the others keep the fixed
// table.
var TableOps = []coll.Operation{coll.OpBarrier, coll.OpBcast, coll.OpReduce, coll.OpAllreduce, coll.OpAllgather, coll.OpAlltoall}

const (
	tableMinSize = 64
	tableMaxSize = 4 << 20
	// tableBlockBytes is about what one block's calls move per rank: many
	// calls of small messages, at least tableMinCalls of large ones.
	tableBlockBytes = 2 << 20
	tableMinCalls   = 6
	tableMaxCalls   = 200
	tableWarmup     = 2                    // untimed calls before each block: the first after another algorithm pays for the switch
	tableScreens    = 2                    // blocks of the screen
	tableBlockTime  = 3 * time.Millisecond // the least a round's block lasts
	// tableScreen: an algorithm whose screen took more than this times
	// the fastest's is not timed again, beyond the fastest few
	// (tableKeepLeast); one block here strays by a third.
	tableScreen = 1.5
	// tableKeep bounds the algorithms of a size timed again.
	tableKeep = 6
	// tableMinRounds is the rounds before any algorithm is dropped;
	// tableSlower the share of rounds an algorithm must have run slower
	// than the leader to be dropped (a sign test: 6 of 7 rounds or more
	// happens by chance to one of equals in 1 run of 16).
	tableMinRounds = 5
	tableSlower    = 0.8
	// tableWake is how long the pass runs calls before it times any: an
	// idle Go process has its runtime's monitor wake every 20 µs for a few
	// milliseconds, which here costs a spinning rank ~30 µs each time.
	tableWake = 20 * time.Millisecond
)

// TableSizes are the sizes the pass times: powers of two from 64 B to
// 4 MiB (a quick pass: powers of four to 1 MiB). Barrier has one size, 0.
func TableSizes(op coll.Operation, quick bool) []int {
	if op == coll.OpBarrier {
		return []int{0}
	}
	var out []int
	for s := tableMinSize; s <= tableMaxSize; s <<= 1 {
		if !quick || s&0x5555555555555555 != 0 && s <= 1<<20 {
			out = append(out, s)
		}
	}
	return out
}

// tableKeepLeast is how many of the screen's fastest go on to the rounds
// however far behind: one lucky block of the fastest (a third below its
// usual) would otherwise leave it alone, unchallenged.
func tableKeepLeast(quick bool) int {
	if quick {
		return 2
	}
	return 3
}

// tableRounds is the most rounds the algorithms kept after screening
// take.
func tableRounds(quick bool) int {
	if quick {
		return 6
	}
	return 16
}

// TableUnits is the steps TableRun reports to Progress.
func TableUnits(quick bool) int {
	n := 0
	for _, op := range TableOps {
		n += len(TableSizes(op, quick))
	}
	return n
}

// TableRun is the collective table pass every rank of c (all the ranks
// of one node) calls. It returns on rank 0 the sampled table; nil
// elsewhere.
func TableRun(ctx context.Context, c *commtune.Comm, quick bool, progress Progress) (profile.CollTable, error) {
	if err := wake(ctx, c); err != nil {
		return nil, err
	}
	table := profile.CollTable{}
	done, total := 0, TableUnits(quick)
	for _, op := range TableOps {
		for _, size := range TableSizes(op, quick) {
			p, err := tablePoint(ctx, c, op, size, quick)
			if err != nil {
				return nil, fmt.Errorf("%s at %s: %w", op, units.FormatSize(int64(size)), err)
			}
			table[string(op)] = append(table[string(op)], p)
			done++
			if progress != nil && c.Rank() == 0 {
				progress(done, total, fmt.Sprintf("%s of %d ranks, %s", op, c.Size(), units.FormatSize(int64(size))))
			}
		}
	}
	if c.Rank() != 0 {
		return nil, nil
	}
	return table, nil
}

// wake runs barriers for tableWake.
func wake(ctx context.Context, c *commtune.Comm) error {
	return collcall.For(ctx, c, tableWake, 20, func() error { return c.Barrier(ctx) })
}

// candidate is one algorithm's blocks at one size.
type candidate struct {
	algo   coll.Algorithm
	blocks []float64 // each block's mean call on its slowest rank, ns; by round, 0 where it did not run
	out    bool      // dropped from the rounds
}

// tablePoint times op's algorithms at size and returns the point.
func tablePoint(ctx context.Context, c *commtune.Comm, op coll.Operation, size int, quick bool) (profile.CollPoint, error) {
	n := c.Size()
	size = collcall.Size(op, n, size)
	call, err := collcall.New(op, n, c.Rank(), size)
	if err != nil {
		return profile.CollPoint{}, err
	}
	var cands []*candidate
	for _, a := range coll.Sampled(op, size) {
		cands = append(cands, &candidate{algo: a})
	}
	calls := min(max(tableBlockBytes/max(size*max(n-1, 1), 1), tableMinCalls), tableMaxCalls)
	round := func(r int) error {
		for k := range cands {
			cd := cands[(k+r)%len(cands)] // take turns going first
			d := 0.0
			if !cd.out {
				var err error
				if d, err = tableBlock(ctx, c, call, cd.algo, calls); err != nil {
					return fmt.Errorf("%s: %w", cd.algo.Name(), err)
				}
			}
			cd.blocks = append(cd.blocks, d)
		}
		return nil
	}
	// The screen: two blocks each, the lower counting, since a stall only
	// ever adds; those far behind the fastest are out.
	for r := range tableScreens {
		if err := round(r); err != nil {
			return profile.CollPoint{}, err
		}
	}
	for _, cd := range cands {
		cd.blocks = append([]float64{min(cd.blocks[0], cd.blocks[1])}, cd.blocks[tableScreens:]...)
	}
	order := make([]*candidate, len(cands))
	copy(order, cands)
	slices.SortStableFunc(order, func(a, b *candidate) int { return cmp.Compare(a.blocks[0], b.blocks[0]) })
	least := tableKeepLeast(quick)
	for i, cd := range order {
		cd.out = i >= tableKeep || i >= least && cd.blocks[0] > tableScreen*order[0].blocks[0]
	}
	// Rounds run blocks of at least tableBlockTime of the fastest: a
	// block shorter than the scheduler's slices, with ranks outnumbering
	// processors, measures how the slices fell.
	calls = min(max(calls, int(tableBlockTime.Nanoseconds()/int64(order[0].blocks[0]))+1), tableMaxCalls)
	for r := 1; r <= tableRounds(quick) && inRounds(cands) > 1; r++ {
		if err := round(r); err != nil {
			return profile.CollPoint{}, err
		}
		if r >= tableMinRounds {
			dropSlower(cands)
		}
	}
	return rankPoint(size, cands), nil
}

// inRounds counts the candidates still in the rounds.
func inRounds(cands []*candidate) int {
	n := 0
	for _, cd := range cands {
		if !cd.out {
			n++
		}
	}
	return n
}

// relative returns cd's blocks after the screen, each divided by the
// median block of its round: figures the drift between rounds does not
// move.
func relative(cd *candidate, cands []*candidate) []float64 {
	var rel []float64
	for r := 1; r < len(cd.blocks); r++ {
		if cd.blocks[r] == 0 {
			continue
		}
		var round []float64
		for _, o := range cands {
			if o.blocks[r] > 0 {
				round = append(round, o.blocks[r])
			}
		}
		rel = append(rel, cd.blocks[r]/stats.Median(round))
	}
	return rel
}

// leader returns the candidate still in the rounds with the lowest median
// relative block (the fastest of the screen when no round ran).
func leader(cands []*candidate) *candidate {
	var best *candidate
	bestFig := 0.0
	for _, cd := range cands {
		if cd.out {
			continue
		}
		f := cd.blocks[0]
		if rel := relative(cd, cands); len(rel) > 0 {
			f = stats.Median(rel)
		}
		if best == nil || f < bestFig {
			best, bestFig = cd, f
		}
	}
	return best
}

// paired returns cd's blocks divided by ref's in the rounds (after the
// screen) both ran.
func paired(cd, ref *candidate) []float64 {
	var out []float64
	for r := 1; r < len(cd.blocks) && r < len(ref.blocks); r++ {
		if cd.blocks[r] > 0 && ref.blocks[r] > 0 {
			out = append(out, cd.blocks[r]/ref.blocks[r])
		}
	}
	return out
}

// dropSlower takes out of the rounds every candidate that ran slower than
// the leader in at least tableSlower of their paired rounds.
func dropSlower(cands []*candidate) {
	lead := leader(cands)
	for _, cd := range cands {
		if cd.out || cd == lead {
			continue
		}
		ratios := paired(cd, lead)
		slower := 0
		for _, x := range ratios {
			if x > 1 {
				slower++
			}
		}
		if len(ratios) >= tableMinRounds && float64(slower) >= tableSlower*float64(len(ratios)) {
			cd.out = true
		}
	}
}

// rankPoint is the point the blocks give: the leader first, at the median
// of its blocks; the others that took part in rounds at their median
// relative block scaled as the leader's is; those screened out at their
// own block.
func rankPoint(size int, cands []*candidate) profile.CollPoint {
	lead := leader(cands)
	var own []float64
	for _, b := range lead.blocks {
		if b > 0 {
			own = append(own, b)
		}
	}
	leadNS := stats.Median(own)
	scale := 1.0 // ns per unit of relative block
	if rel := relative(lead, cands); len(rel) > 0 {
		scale = leadNS / stats.Median(rel)
	}
	type est struct {
		cd *candidate
		ns float64
		n  int
	}
	var ests []est
	for _, cd := range cands {
		e := est{cd: cd, ns: cd.blocks[0]}
		for _, b := range cd.blocks {
			if b > 0 {
				e.n++
			}
		}
		switch rel := relative(cd, cands); {
		case cd == lead:
			e.ns = leadNS
		case len(rel) > 0:
			e.ns = scale * stats.Median(rel)
		}
		ests = append(ests, e)
	}
	slices.SortStableFunc(ests, func(a, b est) int {
		switch {
		case a.cd == lead:
			return -1
		case b.cd == lead:
			return 1
		}
		return cmp.Compare(a.ns, b.ns)
	})
	p := profile.CollPoint{Bytes: int64(size)}
	prev := 0.0
	for _, e := range ests[:min(len(ests), profile.MaxRanked)] {
		us := max(e.ns/1e3, prev, 1e-3) // no rival below the leader the rounds chose
		p.Ranked = append(p.Ranked, profile.CollTime{Algo: e.cd.algo.Name(), MeanUS: us, Blocks: e.n})
		prev = us
	}
	return p
}

// tableBlock runs a few untimed calls of algo, then calls back to back,
// and returns the mean call on the slowest rank in nanoseconds.
func tableBlock(ctx context.Context, c *commtune.Comm, call func(context.Context, *commtune.Comm, []commtune.CollOption) error, algo coll.Algorithm, calls int) (float64, error) {
	opts := []commtune.CollOption{commtune.WithAlgorithm(algo.Name())}
	for range tableWarmup {
		if err := call(ctx, c, opts); err != nil {
			return 0, err
		}
	}
	t0 := time.Now()
	for range calls {
		if err := call(ctx, c, opts); err != nil {
			return 0, err
		}
	}
	mean := []float64{float64(time.Since(t0)) / float64(calls)}
	if err := commtune.Allreduce(ctx, c, mean, mean, commtune.Max); err != nil {
		return 0, err
	}
	return max(mean[0], 1), nil
}
