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
