package profile

import (
	"fmt"
	"math"
	"sort"
)

// CollTable is a collective decision table a node pass sampled for one
// number of ranks: per operation ("bcast", "allreduce" …), the points it
// timed in increasing size.
type CollTable map[string][]CollPoint

// CollPoint is one size of one operation in a sampled table: the
// algorithms that came closest to the fastest, fastest first.
type CollPoint struct {
	// Bytes is the size as decision tables count it: the vector for bcast
	// and the reductions, one rank's block for the others.
	Bytes int64 `json:"bytes"`
	// Ranked holds the fastest algorithm and its nearest rivals (at most
	// MaxRanked), by increasing time.
	Ranked []CollTime `json:"ranked"`
}

// CollTime is one algorithm's time at a point: the median over blocks of
// back-to-back calls of each block's mean call on its slowest rank.
type CollTime struct {
	Algo   string  `json:"algo"`
	MeanUS float64 `json:"mean_us"`
	Blocks int     `json:"blocks"`
}

// MaxRanked bounds a point's ranked algorithms.
const MaxRanked = 8

// maxCollOps bounds the operations of one table.
const maxCollOps = 32

// CollRanks returns the rank counts t has sampled tables for, in
// increasing order.
func (t *Transport) CollRanks() []int {
	var out []int
	for key := range t.Coll {
		if n, ok := rankKey(key); ok {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// Margin is how much slower the runner-up ran than the fastest (0.1: 10 %
// slower), or +Inf when only one algorithm was kept.
func (p CollPoint) Margin() float64 {
	if len(p.Ranked) < 2 || p.Ranked[0].MeanUS <= 0 {
		return math.Inf(1)
	}
	return p.Ranked[1].MeanUS/p.Ranked[0].MeanUS - 1
}

// validateColl checks t's sampled tables.
func (t *Transport) validateColl(name string) error {
	if len(t.Coll) > maxCurves {
		return invalid("transport %q: %d collective tables", name, len(t.Coll))
	}
	if len(t.Coll) > 0 && (t.NodeCPUs < 1 || t.NodeCPUs > maxNodeRanks) {
		return invalid("transport %q: collective tables on %d processors", name, t.NodeCPUs)
	}
	for key, table := range t.Coll {
		n, ok := rankKey(key)
		if !ok {
			return invalid("transport %q: a collective table of %q ranks", name, key)
		}
		if len(table) > maxCollOps {
			return invalid("transport %q: a collective table of %d operations", name, len(table))
		}
		for op, points := range table {
			if err := validatePoints(points); err != nil {
				return invalid("%s collective table of %d ranks, %s: %v", name, n, op, err)
			}
		}
	}
	return nil
}

func validatePoints(points []CollPoint) error {
	if len(points) == 0 || len(points) > maxSamples {
		return fmt.Errorf("%d points", len(points))
	}
	for i, p := range points {
		switch {
		case p.Bytes < 0 || p.Bytes > maxSize:
			return fmt.Errorf("size %d", p.Bytes)
		case i > 0 && p.Bytes <= points[i-1].Bytes:
			return fmt.Errorf("sizes not increasing at %d", p.Bytes)
		case len(p.Ranked) == 0 || len(p.Ranked) > MaxRanked:
			return fmt.Errorf("size %d: %d algorithms", p.Bytes, len(p.Ranked))
		}
		for j, r := range p.Ranked {
			switch {
			case r.Algo == "" || len(r.Algo) > maxAlgoName:
				return fmt.Errorf("size %d: an algorithm named %q", p.Bytes, r.Algo)
			case !(r.MeanUS > 0 && r.MeanUS <= maxNanos/1e3):
				return fmt.Errorf("size %d: %s took %v µs", p.Bytes, r.Algo, r.MeanUS)
			case j > 0 && r.MeanUS < p.Ranked[j-1].MeanUS:
				return fmt.Errorf("size %d: %s ranked after a slower algorithm", p.Bytes, r.Algo)
			case r.Blocks < 1:
				return fmt.Errorf("size %d: %s over %d blocks", p.Bytes, r.Algo, r.Blocks)
			}
		}
	}
	return nil
}

// maxAlgoName bounds an algorithm's name ("allreduce/reduce-bcast/binary/seg=64K").
const maxAlgoName = 96
