// Package sample is the sampling pass of seed 000 §III-A: two ranks
// ping-pong every transfer method of the transport between them over
// log-spaced sizes, through the library's own code paths (the core's
// protocols, the scheduler's strategies, the driver's methods), and rank 0
// keeps the median and quartiles of each point for the profile.
package sample

import "time"

// Sizes: powers of two and their midpoints (3·2^(k−1)) from 1 byte to
// MaxSize, which a quick pass thins to the powers of two.
const (
	MaxSize     = 16 << 20
	maxEager    = 512 << 10 // eager samples stop here: rendezvous wins long before
	maxPair     = 256 << 10 // two-packets and aggregated: each message up to this
	budgetBytes = 4 << 20   // a block of one method moves about this much
)

// Plan fixes what a pass measures; both ranks derive the same one from
// the same flags, so they walk the same loops in step (rank 0 chooses
// where to refine, and tells rank 1).
type Plan struct {
	Quick  bool
	Sizes  []int64
	Blocks int // interleaved blocks per size: the methods take turns, so drift hits all alike
	MinRep int // round trips per block, at least
	MaxRep int // and at most (small messages)
	// Refine is the time a transport's pass spends, after its coarse
	// sizes, sampling again where thresholds are uncertain (0: none).
	Refine time.Duration
}

// NewPlan returns the full pass or, with quick, a pass about four times
// shorter.
func NewPlan(quick bool) Plan {
	// Many short blocks rather than a few long ones: TCP on this machine
	// shifts between a fast and a slow regime for stretches of tens of
	// milliseconds, and only fine interleaving gives every method the same
	// share of each.
	p := Plan{Quick: quick, Blocks: 25, MinRep: 1, MaxRep: 60, Refine: 4 * time.Second}
	if quick {
		p.Blocks, p.MinRep, p.MaxRep, p.Refine = 4, 2, 30, 600*time.Millisecond
	}
	for s := int64(1); s <= MaxSize; s *= 2 {
		p.Sizes = append(p.Sizes, s)
		if mid := s + s/2; !quick && mid > s && mid < 2*s && mid <= MaxSize {
			p.Sizes = append(p.Sizes, mid)
		}
	}
	return p
}

// Reps returns the round trips per block at size: fewer for large sizes,
// as the seed does, so each block moves about budgetBytes.
func (p Plan) Reps(size int64) int {
	n := int(budgetBytes / max(size, 1))
	return min(max(n, p.MinRep), p.MaxRep)
}

// Units returns the progress steps of a pass: one per block per size in
// each phase.
func (p Plan) Units() int {
	n := 0
	for _, s := range p.Sizes {
		n += p.Blocks
		if s <= maxPair {
			n += p.Blocks
		}
	}
	if p.Refine > 0 {
		n += 2 * refineUnits
	}
	return n + len(collectiveSizes(p))*p.collBlocks()
}

// refineUnits is the progress steps of one refinement stage, which
// advance with its time rather than its blocks (their number is not known
// beforehand).
const refineUnits = 50
