package coll

import (
	"math"
	"slices"
)

// Table is a decision table sampled on the machine (`commtune sample`):
// per operation and number of ranks, the algorithms that ran fastest at a
// ladder of sizes. Where it has a call's operation and ranks it decides
// before the fixed table does, which stays the fallback for everything
// else.
type Table struct {
	points map[tableKey][]TablePoint
}

type tableKey struct {
	op    Operation
	ranks int
}

// TablePoint is one sampled size: the algorithms fastest first, with
// their mean call in microseconds.
type TablePoint struct {
	Bytes  int
	Ranked []Algorithm
	MeanUS []float64
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{points: map[tableKey][]TablePoint{}} }

// Add sets the points of op on ranks ranks, in increasing size.
func (t *Table) Add(op Operation, ranks int, points []TablePoint) {
	t.points[tableKey{op, ranks}] = points
}

// Points returns what t holds for op on ranks ranks (nil if nothing).
func (t *Table) Points(op Operation, ranks int) []TablePoint {
	if t == nil {
		return nil
	}
	return t.points[tableKey{op, ranks}]
}

// Ranks returns the rank counts t holds some operation for, increasing.
func (t *Table) Ranks() []int {
	var out []int
	if t == nil {
		return out
	}
	for k := range t.points {
		if !slices.Contains(out, k.ranks) {
			out = append(out, k.ranks)
		}
	}
	slices.Sort(out)
	return out
}

// Decide returns the sampled choice for op on ranks ranks moving bytes (as
// Decide counts them), from the point nearest in size on a log scale: the
// fastest algorithm there that can run the call (a non-commutative
// reduction skips those that need commutativity). ok is false where t has
// no point for op and ranks, or none that can run it.
func (t *Table) Decide(op Operation, ranks, bytes int, commutative bool) (a Algorithm, p TablePoint, ok bool) {
	points := t.Points(op, ranks)
	if len(points) == 0 {
		return Algorithm{}, TablePoint{}, false
	}
	p = points[nearest(points, bytes)]
	for _, a := range p.Ranked {
		if commutative || !a.Commutative() {
			return a, p, true
		}
	}
	return Algorithm{}, p, false
}

// nearest returns the index of the point whose size is nearest bytes on a
// log scale, the smaller of two as near: between sampled sizes an
// algorithm's time changes with the ratio of sizes, not their difference.
func nearest(points []TablePoint, bytes int) int {
	x := math.Log2(float64(max(bytes, 1)))
	best, dist := 0, math.Inf(1)
	for i, p := range points {
		if d := math.Abs(math.Log2(float64(max(p.Bytes, 1))) - x); d < dist {
			best, dist = i, d
		}
	}
	return best
}

// Sampled lists the algorithms a sampling pass times for op at bytes:
// Algorithms(op), less the pipelined forms whose segment holds the whole
// message, which run as the unsegmented form does.
func Sampled(op Operation, bytes int) []Algorithm {
	var out []Algorithm
	for _, a := range Algorithms(op) {
		if a.Segment > 0 && a.Segment >= bytes {
			continue
		}
		out = append(out, a)
	}
	return out
}

// Candidates returns the algorithms of the point Decide reads that can
// run the call and ran within within times the fastest (1.5: half as slow
// again), fastest first, at most most of them: the sampled rivals a
// run-time selector draws among.
func (t *Table) Candidates(op Operation, ranks, bytes int, commutative bool, within float64, most int) []Algorithm {
	points := t.Points(op, ranks)
	if len(points) == 0 {
		return nil
	}
	p := points[nearest(points, bytes)]
	var out []Algorithm
	first := 0.0
	for i, a := range p.Ranked {
		if !commutative && a.Commutative() {
			continue
		}
		if first == 0 {
			first = p.MeanUS[i]
		}
		if len(out) == most || p.MeanUS[i] > within*first {
			break
		}
		out = append(out, a)
	}
	return out
}

// A run-time selector draws among the algorithms sampled within
// RivalsWithin of the fastest, at most RivalsMost of them (Rivals):
// exploring near-equals costs a slow first call at each switch, which
// within 1.25x cost more than the lottery found.
const (
	RivalsWithin = 1.10
	RivalsMost   = 4
)

// Rivals returns Candidates within RivalsWithin, at most RivalsMost: what
// the lottery draws among where t has the call. One that is clearly
// fastest leaves nothing to draw.
func (t *Table) Rivals(op Operation, ranks, bytes int, commutative bool) []Algorithm {
	return t.Candidates(op, ranks, bytes, commutative, RivalsWithin, RivalsMost)
}
