// Package tracereport summarizes a job's timeline (internal/trace) as mpiP
// does: time per operation and per call site over every rank, its share
// of the ranks' wall time and how unevenly the ranks spent it, the
// algorithms the collectives took; and draws it (Plot).
//
// Only top-level spans count towards the times: a span inside another
// span of the same rank and lane (a call the library made on behalf of
// another) is part of its parent's time, and counting it again would
// count the same nanoseconds twice. Calls on different lanes of one rank
// (goroutines calling at once) each count in full, so shares can add up
// to more than the ranks' wall time.
package tracereport

import (
	"cmp"
	"slices"

	"github.com/commtune/commtune/internal/trace"
)

// Report is a job's trace summarized.
type Report struct {
	Job     string
	Ranks   []int   // the world ranks read, in order
	Size    int     // the job's world size
	Wall    []int64 // each rank's wall time (EndNs - StartNs), ns, as Ranks
	WallSum int64   // their sum: the base of every share
	Spans   int64   // spans read, nested ones included
	Dropped int64   // spans the ranks could not record
	// Ops has a row per operation, Sites (when asked for) a row per
	// operation and call site; both sorted by Total, largest first.
	Ops, Sites []Row
	// PerRank is each operation's time on each rank.
	PerRank Matrix
	// Algorithms counts, per operation, the calls each algorithm ran.
	Algorithms []OpAlgorithms
}

// Row is one operation's calls, or one call site's of an operation, over
// every rank. Times are nanoseconds.
type Row struct {
	Op, Cat string
	Site    string // "" in the per-operation rows, and for calls of no known site
	Calls   int64  // top-level calls, every rank
	Total   int64  // their time, summed over the ranks
	// Share is Total over Report.WallSum.
	Share float64
	Mean  int64 // Total / Calls
	// Slowest is the world rank that spent the most time in these calls,
	// SlowestTotal that time.
	Slowest      int
	SlowestTotal int64
	// Imbalance is SlowestTotal over the mean of every rank's time in
	// these calls (ranks that made none count as zero): 1 when the ranks
	// spent the same, the number of ranks when one rank spent it all.
	Imbalance float64
}

// Matrix holds each operation's time on each rank.
type Matrix struct {
	Ops   []string  // as Report.Ops
	Ranks []int     // as Report.Ranks
	Total [][]int64 // Total[o][i]: time of Ops[o] on Ranks[i], ns
}

// OpAlgorithms counts an operation's calls per algorithm.
type OpAlgorithms struct {
	Op    string
	Calls int64 // calls that named an algorithm
	Algs  []AlgCount
}

// AlgCount is how many calls ran algorithm Alg, chosen by By.
type AlgCount struct {
	Alg, By string
	Calls   int64
}

// opSite keys a row.
type opSite struct{ op, site string }

// acc accumulates one row, per rank.
type acc struct {
	cat    string
	calls  int64
	perRnk []int64
}

// Summarize summarizes j: a row per operation and, with sites, per
// operation and call site.
func Summarize(j *trace.Job, sites bool) Report {
	n := len(j.Ranks)
	r := Report{Job: j.ID, Ranks: make([]int, n), Wall: make([]int64, n)}
	ops := map[opSite]*acc{}
	bySite := map[opSite]*acc{}
	algs := map[string]map[[2]string]int64{}
	add := func(m map[opSite]*acc, k opSite, cat string, i int, d int64) {
		a := m[k]
		if a == nil {
			a = &acc{cat: cat, perRnk: make([]int64, n)}
			m[k] = a
		}
		a.calls++
		a.perRnk[i] += d
	}
	for i, info := range j.Ranks {
		r.Ranks[i], r.Wall[i] = info.Rank, info.Wall()
		r.WallSum += info.Wall()
		r.Size = info.Size
		r.Dropped += info.Dropped
		var spans []trace.Span
		if i < len(j.Spans) {
			spans = j.Spans[i]
		}
		r.Spans += int64(len(spans))
		forEachTop(spans, func(s *trace.Span) {
			add(ops, opSite{op: s.Name}, s.Cat, i, s.Dur())
			if sites {
				add(bySite, opSite{s.Name, s.Site}, s.Cat, i, s.Dur())
			}
		})
		for k := range spans {
			s := &spans[k]
			if s.Alg == "" {
				continue
			}
			m := algs[s.Name]
			if m == nil {
				m = map[[2]string]int64{}
				algs[s.Name] = m
			}
			m[[2]string{s.Alg, s.By}]++
		}
	}
	r.Ops = rows(ops, r.Ranks, r.WallSum)
	if sites {
		r.Sites = rows(bySite, r.Ranks, r.WallSum)
	}
	r.PerRank = Matrix{Ranks: r.Ranks}
	for _, row := range r.Ops {
		r.PerRank.Ops = append(r.PerRank.Ops, row.Op)
		r.PerRank.Total = append(r.PerRank.Total, ops[opSite{op: row.Op}].perRnk)
	}
	r.Algorithms = algorithms(algs, r.Ops)
	return r
}

// forEachTop calls f for each top-level span of spans (sorted as Job's
// are): one that starts at or after the end of the last top-level span of
// its lane. The spans of a lane nest or follow each other, so one that
// starts before that end lies within that span.
func forEachTop(spans []trace.Span, f func(*trace.Span)) {
	ends := map[int]int64{} // by lane: end of its last top-level span
	for k := range spans {
		s := &spans[k]
		if e, ok := ends[s.Lane]; ok && s.Start < e {
			continue
		}
		ends[s.Lane] = s.End
		f(s)
	}
}

// rows makes the rows of m, sorted by Total, largest first.
func rows(m map[opSite]*acc, ranks []int, wall int64) []Row {
	out := make([]Row, 0, len(m))
	for k, a := range m {
		row := Row{Op: k.op, Site: k.site, Cat: a.cat, Calls: a.calls, Slowest: -1}
		for i, t := range a.perRnk {
			row.Total += t
			if row.Slowest < 0 || t > row.SlowestTotal {
				row.Slowest, row.SlowestTotal = ranks[i], t
			}
		}
		if a.calls > 0 {
			row.Mean = row.Total / a.calls
		}
		if wall > 0 {
			row.Share = float64(row.Total) / float64(wall)
		}
		if row.Total > 0 {
			row.Imbalance = float64(row.SlowestTotal) / (float64(row.Total) / float64(len(ranks)))
		} else {
			row.Imbalance = 1
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b Row) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Op, b.Op), cmp.Compare(a.Site, b.Site))
	})
	return out
}

// algorithms orders the algorithm counts: operations as in ops (those
// with no top-level call after, by name), algorithms by calls.
func algorithms(m map[string]map[[2]string]int64, ops []Row) []OpAlgorithms {
	rank := map[string]int{}
	for i, row := range ops {
		rank[row.Op] = i
	}
	out := make([]OpAlgorithms, 0, len(m))
	for op, counts := range m {
		oa := OpAlgorithms{Op: op}
		for k, c := range counts {
			oa.Algs = append(oa.Algs, AlgCount{Alg: k[0], By: k[1], Calls: c})
			oa.Calls += c
		}
		slices.SortFunc(oa.Algs, func(a, b AlgCount) int {
			return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Alg, b.Alg), cmp.Compare(a.By, b.By))
		})
		out = append(out, oa)
	}
	order := func(op string) int {
		if i, ok := rank[op]; ok {
			return i
		}
		return len(ops)
	}
	slices.SortFunc(out, func(a, b OpAlgorithms) int {
		return cmp.Or(cmp.Compare(order(a.Op), order(b.Op)), cmp.Compare(a.Op, b.Op))
	})
	return out
}
