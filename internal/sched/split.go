package sched

import (
	"math"
	"strconv"
)

// SplitRule says how a Bulk packet is divided among rails.
type SplitRule uint8

const (
	// SplitCurves gives the rails chunks that finish together, solved on
	// the rails' sampled curves (RailModel), busy rails included from
	// their predicted release (the default).
	SplitCurves SplitRule = iota
	// SplitWeighted is seed 000 §III-C's N-rail rule: rails join in the
	// order of their predicted release and share each step's data in
	// proportion to their asymptotic bandwidths.
	SplitWeighted
	// SplitIso gives equal chunks to the idle rails (the seeds' iso-split
	// baseline); it needs no model.
	SplitIso
)

// maxRails bounds the rails Split considers (fixed-size arrays: scheduling
// allocates nothing); rails beyond it are ignored.
const maxRails = 8

// defaultMinChunk is Split's MinChunk when 0.
const defaultMinChunk = 32 << 10

// singleMargin: a split is kept only if it beats the best single rail by
// more than this fraction.
const singleMargin = 0.02

// bisections bounds the bisection on the finish time.
const bisections = 48

// Split is the multirail strategy (seed 002 §II, seed 000 §III-C): a Bulk
// packet is cut into chunks over several rails so that they finish
// together, using the rails' models (Scheduler.SetModel) and, for busy
// rails, their predicted release; Eager packets are aggregated as by
// Aggregate and go whole to the idle rail that finishes them first.
//
// For a Bulk packet, the chunks of idle rails are planned at once; the
// share of a busy rail stays in the packet (Packet.Remaining) and is solved
// again, with what is left, when a rail goes idle. When the solve gives the
// idle rails nothing (a busy rail soon free does the whole packet sooner)
// the strategy plans nothing and waits. Rails without a Model take no part
// in SplitCurves and SplitWeighted unless none has one: the packet then
// goes whole to the first idle rail, as with Default. Rails beyond the
// eighth are ignored.
type Split struct {
	Rule SplitRule
	// Aggregate is the size bound of an aggregated Eager frame, as
	// Aggregate.Max; 0 sends one Eager packet per frame.
	Aggregate int
	// MinChunk is the smallest chunk a rail is given (32 KiB when 0);
	// a packet smaller than that goes whole to one rail.
	MinChunk int
	// Offload: chunks of at least this many bytes, other than the last
	// one a Schedule call plans, are posted with driver.Frame.Offload
	// (0: never). Multicore posting (seed 002 §III-B/D): the rails'
	// background writers copy those chunks into the kernel on other cores
	// while the caller writes the last one itself. A handoff costs a few
	// µs (seed 002 §III-D: 3–6 µs), so it pays only for chunks whose copy
	// takes longer; BenchmarkOffload measures both.
	Offload int
}

// Name returns "split", "split/weighted" or "split/iso", followed by
// "+offload" when Offload is set.
func (s Split) Name() string {
	name := "split"
	switch s.Rule {
	case SplitWeighted:
		name = "split/weighted"
	case SplitIso:
		name = "split/iso"
	}
	if s.Offload > 0 {
		name += "+offload"
	}
	return name
}

// railIn is one rail as a split sees it.
type railIn struct {
	m    *RailModel // nil: no prediction
	busy bool
	at   float64 // ns until a busy rail is free (its predicted release)
}

// end returns when n bytes sent on r would be done, from now.
func (r *railIn) end(n int) float64 { return r.at + r.m.Predict(n) }

// Schedule plans the packets at the head of q on the rails.
func (s Split) Schedule(q *Queue, rails []RailState, plan *Plan) {
	from := len(plan.As)
	s.schedule(q, rails, plan)
	if s.Offload > 0 {
		s.markOffload(plan.As[from:])
	}
}

// markOffload sets Offload on the Bulk chunks in as of at least s.Offload
// bytes but the last, when there are two or more: the scheduler posts the
// plan in order, so the writers of the earlier chunks run while the caller
// writes the last one. A lone chunk gains nothing from a handoff.
func (s Split) markOffload(as []Assignment) {
	last, n := -1, 0
	for i := range as {
		if as[i].Packets[0].Kind == Bulk {
			last = i
			n++
		}
	}
	if n < 2 {
		return
	}
	for i := range as[:last] {
		a := &as[i]
		a.Offload = a.Packets[0].Kind == Bulk && a.Len >= s.Offload
	}
}

// schedule is Schedule's decision, before markOffload.
func (s Split) schedule(q *Queue, rails []RailState, plan *Plan) {
	k := min(len(rails), maxRails)
	var in [maxRails]railIn
	for i := 0; i < k; i++ {
		r := &rails[i]
		// An idle rail may have a release too: bytes it reported sent
		// that still wait in the kernel (driver.Backlogger).
		in[i] = railIn{m: r.Model, busy: r.Busy, at: release(r.BusyFor)}
	}
	for {
		p := q.Peek()
		if p == nil || firstIdle(&in, k) < 0 {
			return
		}
		if p.Kind == Bulk {
			if !s.bulk(q, p, rails, &in, k, plan) {
				return
			}
			continue
		}
		n, size := 1, p.Len()
		if s.Aggregate > 0 {
			n, size = aggregateRun(q, s.Aggregate)
		}
		i := fastestIdle(&in, k, size)
		if s.Aggregate > 0 {
			if limit := eagerLimit(s.Aggregate, rails[i].Caps); limit < s.Aggregate {
				n, size = aggregateRun(q, limit)
			}
		}
		packEager(q, plan, i, n)
		in[i].busy = true
		if in[i].m != nil {
			in[i].at = in[i].m.Predict(size)
		}
	}
}

// bulk plans the Bulk packet p at the head of q: the chunks of idle rails
// now. It pops p and reports true when p is planned entirely.
func (s Split) bulk(q *Queue, p *Packet, rails []RailState, in *[maxRails]railIn, k int, plan *Plan) bool {
	r := p.Remaining()
	var out [maxRails]int
	if r == 0 || k == 1 {
		i := firstIdle(in, k)
		plan.AddBulk(i, p, p.planned, r)
		in[i].busy = true
		q.Pop()
		return true
	}
	splitInto(s.Rule, in, k, r, s.MinChunk, &out)
	if r == p.bodyLen() && s.Rule != SplitIso {
		lean(rails, in, k, s.MinChunk, &out, p)
	}
	for i := 0; i < k; i++ {
		if out[i] == 0 || in[i].busy {
			continue
		}
		plan.AddBulk(i, p, p.planned, out[i])
		in[i].busy = true
		if in[i].m != nil {
			in[i].at = in[i].m.Predict(out[i])
		}
	}
	if p.Remaining() > 0 {
		return false // the rest waits for busy rails
	}
	q.Pop()
	return true
}

// lean applies a rail's Share to the chunks in out of a whole packet p,
// when every rail is idle and the split uses two or more, and marks p:
// only then does the message's time answer for the lean alone.
func lean(rails []RailState, in *[maxRails]railIn, k, minChunk int, out *[maxRails]int, p *Packet) {
	parts, at, n := 0, -1, 0
	for i := 0; i < k; i++ {
		if in[i].busy {
			return
		}
		if out[i] > 0 {
			parts++
		}
		n += out[i]
		if rails[i].Searched {
			at = i
		}
	}
	if parts < 2 {
		return
	}
	// A split of the whole packet over idle rails: its time scores the
	// share it went with.
	if at < 0 {
		return
	}
	p.solved = max(float64(out[at])/float64(n), math.SmallestNonzeroFloat64)
	if minChunk <= 0 {
		minChunk = defaultMinChunk
	}
	leanChunks(out, k, at, rails[at].Share, minChunk)
}

// release returns a busy rail's predicted release from BusyFor: 0 when it
// is unknown (not a positive finite number).
func release(busyFor float64) float64 {
	if busyFor > 0 && !math.IsInf(busyFor, 1) {
		return busyFor
	}
	return 0
}

// firstIdle returns the first idle rail, or -1.
func firstIdle(in *[maxRails]railIn, k int) int {
	for i := 0; i < k; i++ {
		if !in[i].busy {
			return i
		}
	}
	return -1
}

// fastestIdle returns the idle rail whose model predicts the earliest end
// of size bytes, or the first idle rail if no idle rail has a model; -1 if
// none is idle.
func fastestIdle(in *[maxRails]railIn, k, size int) int {
	best, bestT := -1, math.Inf(1)
	for i := 0; i < k; i++ {
		if in[i].busy || in[i].m == nil {
			continue
		}
		if t := in[i].m.Predict(size); t < bestT {
			best, bestT = i, t
		}
	}
	if best < 0 {
		return firstIdle(in, k)
	}
	return best
}

// PlanSplit returns how rule divides n bytes among rails with the given
// models (nil: no prediction) of which rail i is busy for busy[i] ns more
// (busy may be nil or shorter: idle), with chunks no smaller than minChunk
// (32 KiB when <= 0) unless whole: chunks[i] is rail i's share (they add
// up to n) and finish the predicted time when the last chunk is done (the
// largest busy[i]+Predict(chunks[i]) of the rails given something and
// having a model). Split.Schedule decides with the same code; it plans a
// busy rail's share when that rail is idle again.
func PlanSplit(rule SplitRule, models []*RailModel, busy []float64, n, minChunk int) (chunks []int, finish float64) {
	k := min(len(models), maxRails)
	var in [maxRails]railIn
	for i := 0; i < k; i++ {
		in[i].m = models[i]
		if i < len(busy) && busy[i] > 0 {
			in[i].busy, in[i].at = true, release(busy[i])
		}
	}
	var out [maxRails]int
	finish = splitInto(rule, &in, k, n, minChunk, &out)
	chunks = make([]int, len(models))
	copy(chunks, out[:k])
	return chunks, finish
}

// SplitPays returns the smallest packet size for which SplitCurves over the
// rails, all idle, predicts at least 5 % less time than the best single
// rail; 0 if none up to 1 GiB does.
func SplitPays(models []*RailModel, minChunk int) int {
	k := min(len(models), maxRails)
	var in [maxRails]railIn
	for i := 0; i < k; i++ {
		in[i].m = models[i]
	}
	pays := func(n int) bool {
		var out [maxRails]int
		t := splitInto(SplitCurves, &in, k, n, minChunk, &out)
		single := math.Inf(1)
		for i := 0; i < k; i++ {
			if in[i].m != nil {
				single = min(single, in[i].m.Predict(n))
			}
		}
		return t <= 0.95*single
	}
	hi := 1
	for ; hi <= 1<<30 && !pays(hi); hi *= 2 {
	}
	if hi > 1<<30 {
		return 0
	}
	lo := hi / 2 // does not pay (or 0)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if pays(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// splitInto divides n bytes among in[:k] by rule into out and returns the
// predicted finish time. It allocates nothing.
func splitInto(rule SplitRule, in *[maxRails]railIn, k, n, minChunk int, out *[maxRails]int) float64 {
	*out = [maxRails]int{}
	if minChunk <= 0 {
		minChunk = defaultMinChunk
	}
	if n <= 0 || k <= 0 {
		return 0
	}
	switch {
	case rule == SplitIso:
		splitIso(in, k, n, minChunk, out)
	case !anyModel(in, k):
		whole(in, k, n, out)
	case rule == SplitWeighted:
		splitWeighted(in, k, n, minChunk, out)
	default:
		splitCurves(in, k, n, minChunk, out)
	}
	return finishOf(in, k, out)
}

func anyModel(in *[maxRails]railIn, k int) bool {
	for i := 0; i < k; i++ {
		if in[i].m != nil {
			return true
		}
	}
	return false
}

// whole gives n to the first idle rail, else to rail 0.
func whole(in *[maxRails]railIn, k, n int, out *[maxRails]int) {
	i := firstIdle(in, k)
	if i < 0 {
		i = 0
	}
	out[i] = n
}

// finishOf returns the latest predicted end among the rails out gives
// something to.
func finishOf(in *[maxRails]railIn, k int, out *[maxRails]int) float64 {
	t := 0.0
	for i := 0; i < k; i++ {
		if out[i] > 0 && in[i].m != nil {
			t = max(t, in[i].end(out[i]))
		}
	}
	return t
}

// bestSingle returns the model rail that would finish n bytes first, alone,
// and when.
func bestSingle(in *[maxRails]railIn, use *[maxRails]bool, k, n int) (int, float64) {
	best, bestT := -1, math.Inf(1)
	for i := 0; i < k; i++ {
		if !use[i] {
			continue
		}
		if t := in[i].end(n); best < 0 || t < bestT {
			best, bestT = i, t
		}
	}
	return best, bestT
}

// dropSmall removes from use the rails out gives 0 < chunk < minChunk
// and reports whether it removed any.
func dropSmall(use *[maxRails]bool, k int, out *[maxRails]int, minChunk int) bool {
	dropped := false
	for i := 0; i < k; i++ {
		if out[i] > 0 && out[i] < minChunk {
			use[i] = false
			dropped = true
		}
	}
	return dropped
}

func anyUse(use *[maxRails]bool, k int) bool {
	for i := 0; i < k; i++ {
		if use[i] {
			return true
		}
	}
	return false
}

// splitIso gives equal chunks to the idle rails, fewer rails if the chunks
// would be under minChunk; the last takes the remainder.
func splitIso(in *[maxRails]railIn, k, n, minChunk int, out *[maxRails]int) {
	var idle [maxRails]int
	m := 0
	for i := 0; i < k; i++ {
		if !in[i].busy {
			idle[m] = i
			m++
		}
	}
	if m == 0 {
		whole(in, k, n, out)
		return
	}
	if n/m < minChunk {
		m = max(1, min(m, n/minChunk))
	}
	per := n / m
	for j := 0; j < m-1; j++ {
		out[idle[j]] = per
	}
	out[idle[m-1]] = n - per*(m-1)
}

// splitCurves solves for chunks that finish together on the rails' curves
// (SplitCurves), keeps the split only if it beats the best single rail by
// more than singleMargin, and else gives n whole to that rail.
func splitCurves(in *[maxRails]railIn, k, n, minChunk int, out *[maxRails]int) {
	var use [maxRails]bool
	for i := 0; i < k; i++ {
		use[i] = in[i].m != nil
	}
	best, tBest := bestSingle(in, &use, k, n)
	for {
		solveCurves(in, &use, k, n, out)
		if !dropSmall(&use, k, out, minChunk) {
			break
		}
		if !anyUse(&use, k) {
			*out = [maxRails]int{}
			out[best] = n
			return
		}
	}
	a, b, parts := -1, -1, 0
	for i := 0; i < k; i++ {
		if out[i] > 0 {
			if a < 0 {
				a = i
			} else {
				b = i
			}
			parts++
		}
	}
	if parts == 2 { // seed 000 §III-C: two rails split by dichotomy
		na := dichotomyIn(&in[a], &in[b], n)
		out[a], out[b] = na, n-na
	}
	if tBest <= finishOf(in, k, out)*(1+singleMargin) {
		*out = [maxRails]int{}
		out[best] = n
	}
}

// solveCurves finds, by bisection, the earliest time T at which the rails
// in use, each from its release, can move n bytes together
// (Σ Capacity_i(T − at_i) >= n), and gives each rail its capacity by T
// (trimmed so that the chunks add up to n) in out. The bisection probes
// the false position of n between the bracket's sums first (Illinois:
// the sum is piecewise linear in T, so this lands within bytes in a few
// steps), and the middle when that does not shrink the bracket.
func solveCurves(in *[maxRails]railIn, use *[maxRails]bool, k, n int, out *[maxRails]int) {
	lo, hi := math.Inf(1), math.Inf(1)
	m, fast := 0, -1
	for i := 0; i < k; i++ {
		if use[i] {
			lo = min(lo, in[i].at)
			if t := in[i].end(n); fast < 0 || t < hi {
				hi, fast = t, i // that rail alone moves n by then
			}
			m++
		}
	}
	var capLo, capHi, c [maxRails]int
	sumLo := 0 // nothing fits at lo: Capacity(0) is 0
	sumHi := capacities(in, use, k, hi, &capHi)
	wLo, wHi := float64(-n), float64(sumHi-n) // Illinois weights
	side, bisect := 0, false
	for it := 0; it < bisections && sumHi > n && sumHi-sumLo > m; it++ {
		w := hi - lo
		mid := lo + w/2
		if fp := hi - w*wHi/(wHi-wLo); !bisect && fp > lo && fp < hi {
			mid = fp
		}
		if mid <= lo || mid >= hi {
			break
		}
		sum := capacities(in, use, k, mid, &c)
		if sum >= n {
			hi, sumHi, capHi, wHi = mid, sum, c, float64(sum-n)
			if side > 0 {
				wLo /= 2
			}
			side = 1
		} else {
			lo, sumLo, capLo, wLo = mid, sum, c, float64(sum-n)
			if side < 0 {
				wHi /= 2
			}
			side = -1
		}
		bisect = hi-lo > w/2 // it shrinks slowly: bisect next
	}
	// From the capacities at lo (short of n), add up to each rail's
	// capacity at hi until n: every chunk ends by hi.
	deficit := n - sumLo
	for i := 0; i < k; i++ {
		add := min(deficit, max(0, capHi[i]-capLo[i]))
		out[i] = capLo[i] + add
		deficit -= add
	}
	// Rounding in end(n) − at may leave Σ capHi a byte short of n.
	out[fast] += deficit
}

// capacities sets c to what each rail in use moves by time t and returns
// the sum.
func capacities(in *[maxRails]railIn, use *[maxRails]bool, k int, t float64, c *[maxRails]int) int {
	sum := 0
	for i := 0; i < k; i++ {
		c[i] = 0
		if use[i] && t > in[i].at {
			c[i] = in[i].m.Capacity(t - in[i].at)
			sum += c[i]
		}
	}
	return sum
}

// dichotomy is seed 002 §II-B's two-rail split: starting from halves, it
// moves the boundary by halves until both rails' predicted completions,
// the time each is still busy included, are equal within one byte; it
// returns a's share of n (b takes the rest). Both rails need a Model.
func dichotomy(a, b RailState, n int) (na int) {
	ra := railIn{m: a.Model, at: max(0, a.BusyFor)}
	rb := railIn{m: b.Model, at: max(0, b.BusyFor)}
	return dichotomyIn(&ra, &rb, n)
}

func dichotomyIn(a, b *railIn, n int) int {
	// The smallest x in [0, n] with a's end >= b's end: a's end rises
	// with x, b's falls. The first probe is n/2.
	lo, hi := 0, n
	for lo < hi {
		x := lo + (hi-lo)/2
		if a.end(x) >= b.end(n-x) {
			hi = x
		} else {
			lo = x + 1
		}
	}
	// The balance is between lo-1 and lo: take the one that ends first.
	if lo > 0 && max(a.end(lo-1), b.end(n-lo+1)) < max(a.end(lo), b.end(n-lo)) {
		return lo - 1
	}
	return lo
}

// splitWeighted is seed 000 §III-C's rule for N rails: rails whose release
// comes after the best single rail would have finished are set aside; the
// others join in the order of their release, and during each step until
// the next release the rails in share B_i·step bytes (B_i the asymptotic
// bandwidth); the last step divides the rest in proportion to B_i. Chunks
// under minChunk are dropped and the split done again without them.
func splitWeighted(in *[maxRails]railIn, k, n, minChunk int, out *[maxRails]int) {
	var use [maxRails]bool
	for i := 0; i < k; i++ {
		use[i] = in[i].m != nil
	}
	best, tBest := bestSingle(in, &use, k, n)
	for i := 0; i < k; i++ {
		use[i] = use[i] && in[i].at < tBest
	}
	for {
		weightedShares(in, &use, k, n, out)
		if !dropSmall(&use, k, out, minChunk) {
			return
		}
		if !anyUse(&use, k) {
			*out = [maxRails]int{}
			out[best] = n
			return
		}
	}
}

func weightedShares(in *[maxRails]railIn, use *[maxRails]bool, k, n int, out *[maxRails]int) {
	var ord [maxRails]int // rails in use by release, then index
	var bw [maxRails]float64
	m := 0
	for i := 0; i < k; i++ {
		if !use[i] {
			continue
		}
		bw[i] = in[i].m.Bandwidth()
		j := m
		for ; j > 0 && in[ord[j-1]].at > in[i].at; j-- {
			ord[j] = ord[j-1]
		}
		ord[j] = i
		m++
	}
	var share [maxRails]float64
	rest := float64(n)
	sumB := 0.0
	for j := 0; j < m; j++ {
		sumB += bw[ord[j]]
		if j+1 < m {
			step := in[ord[j+1]].at - in[ord[j]].at
			if moved := sumB * step; moved < rest {
				for l := 0; l <= j; l++ {
					share[ord[l]] += bw[ord[l]] * step
				}
				rest -= moved
				continue
			}
		}
		for l := 0; l <= j; l++ {
			share[ord[l]] += bw[ord[l]] / sumB * rest
		}
		break
	}
	// Whole bytes: round down, the leftover to the largest share.
	*out = [maxRails]int{}
	left, big := n, -1
	for i := 0; i < k; i++ {
		if !use[i] {
			continue
		}
		out[i] = min(int(share[i]), left)
		left -= out[i]
		if big < 0 || share[i] > share[big] {
			big = i
		}
	}
	if big >= 0 {
		out[big] += left
	}
}

// String returns the rule's name: "curves", "weighted" or "iso".
func (r SplitRule) String() string {
	switch r {
	case SplitCurves:
		return "curves"
	case SplitWeighted:
		return "weighted"
	case SplitIso:
		return "iso"
	}
	return "SplitRule(" + strconv.Itoa(int(r)) + ")"
}
