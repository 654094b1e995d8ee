package tune

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// DefaultReqConfidence is HypothesisConfig.ReqConfidence's default.
const DefaultReqConfidence = 2

// HypothesisConfig sets a Hypothesis. The zero value is valid: each zero
// field takes its default.
type HypothesisConfig struct {
	// Samples is how many calls measure each implementation (default 10,
	// as for BruteForce). Must not be negative.
	Samples int
	// ReqConfidence is the confidence a performance hypothesis needs
	// before the implementations that lack its value are removed (default
	// 2, ADCL_hypo_req_confidence). Must not be negative.
	ReqConfidence int
	// Filter is the outlier filter applied to each implementation's
	// samples on each rank.
	Filter FilterConfig
	// Consecutive measures each implementation of a batch Samples times
	// in a row (BruteConfig.Consecutive).
	Consecutive bool
	// Probe and DropRatio drop the hopeless from a batch early, as
	// BruteConfig's do from a brute-force campaign.
	Probe     int
	DropRatio float64
}

// Validate reports every field outside its range, or nil. Zero fields are
// valid: they take their defaults.
func (c HypothesisConfig) Validate() error {
	errs := []error{c.measuring().Validate()}
	if c.ReqConfidence < 0 {
		errs = append(errs, fmt.Errorf("tune: ReqConfidence %d is negative", c.ReqConfidence))
	}
	return errors.Join(errs...)
}

// measuring is the part of c a brute-force campaign shares: how each
// implementation is measured.
func (c HypothesisConfig) measuring() BruteConfig {
	return BruteConfig{Samples: c.Samples, Filter: c.Filter, Consecutive: c.Consecutive, Probe: c.Probe, DropRatio: c.DropRatio}
}

func (c HypothesisConfig) withDefaults() HypothesisConfig {
	m := c.measuring().withDefaults()
	c.Samples, c.Filter, c.Probe, c.DropRatio = m.Samples, m.Filter, m.Probe, m.DropRatio
	if c.ReqConfidence == 0 {
		c.ReqConfidence = DefaultReqConfidence
	}
	return c
}

// Hypothesis is ADCL's selection by performance hypotheses (seed 003 §III,
// ADCL_hypothesis.c). Implementations are characterised by attributes
// (Entry.Attrs: partners aao or pair, data ddt or pack, a primitive …) and
// the selector settles one attribute at a time instead of measuring every
// implementation:
//
//   - A set for attribute j is the implementations that differ only in j,
//     every other attribute fixed at one combination of values. Each is
//     measured Samples times and filtered as by BruteForce; the set's
//     winner is the j value of the one with the least maximum over the
//     ranks of its filtered mean.
//   - Each set updates j's hypothesis as ADCL_hypothesis_set does: the
//     first winner becomes the hypothesis at confidence 1, a set that
//     agrees adds 1, one that disagrees takes 1 away, and at 0 the
//     hypothesis is cleared.
//   - At ReqConfidence every implementation without the hypothesised value
//     is removed and the attribute is settled.
//   - Decisions are delayed (seed 003 §III-A): a batch measures the
//     implementations of several sets, the caller reduces the batch with
//     one allreduce (MAX), and Evaluate makes every comparison the
//     measurements allow, for every attribute. The batch is planned for
//     the unsettled attribute with the fewest values left (the cheapest to
//     settle, and settling it shrinks the rest most): as many of its sets
//     as it needs agreeing comparisons, the first at the other attributes'
//     current values (hypothesis, else first value left), the next varying
//     the attribute with the next fewest values. With ADCL's halo table
//     the first batch is seed 003 §IV's: {aao,pair}×{ddt,pack} at the
//     first primitive, two comparisons for partners and two for data.
//   - An attribute for which no set is left to measure is left unsettled;
//     when no unsettled attribute has one, the implementations left are
//     compared as by brute force, so a selection always ends with a
//     winner.
//
// An implementation is measured at most once; its reduced mean then serves
// every set it belongs to. Selection therefore costs at most
// Samples·len(entries) calls — never more than BruteForce — and at most
// len(entries)−1 reductions (every batch measures a new implementation,
// the first at least two); a single entry wins at once. A batch of two or
// more, round robin, drops the hopeless after Probe samples each as a
// brute-force campaign does (one more reduction; the quickest probe then
// stands as the implementation's time): at most 2·(len(entries)−1)
// reductions, and fewer calls.
//
// The protocol is BruteForce's: Next, run, Record; when Next reports the
// batch done, reduce Local with MAX across the ranks and pass it to
// Evaluate. Every rank that builds it from the same entries and config
// runs the same schedule, so the reductions are the only agreement needed.
// A Hypothesis is pure and not safe for concurrent use.
type Hypothesis struct {
	cfg    HypothesisConfig
	names  []string
	keys   []string   // attribute keys, in order of first appearance
	values [][]string // per attribute, its values in order of first appearance
	vals   [][]int    // per implementation, per attribute: index in values

	alive  []bool    // not pruned
	global []float64 // reduced filtered mean; NaN until measured
	hyp    []int     // per attribute: hypothesised value, -1 for none
	conf   []int     // per attribute: the hypothesis's confidence
	done   map[string]bool
	stuck  []bool // attribute with no set left to measure, reported

	batch       campaign
	members     []int // implementations of the batch, in batch order
	batches     int   // reductions evaluated
	calls       int   // calls of the batches evaluated
	comparisons int   // pairwise comparisons, members−1 per set
	winner      int   // -1 while selecting
	log         []string
}

// NewHypothesis returns a Hypothesis over entries, usually a Registry's
// Entries(). It reads only names and attributes: taking the entries as
// they are, whatever T, spares the caller a conversion and keeps the
// selector away from the implementations.
//
// Every entry must have every attribute key some entry has, and no two
// entries the same values: attributes are what tells implementations
// apart here (BruteForce needs no attributes). It refuses no entries
// (ErrNoCandidates), an empty name (ErrNoName), a name or a combination of
// values given twice (ErrDuplicate), an attribute without a key, given
// twice or missing (ErrBadAttr), and an invalid cfg.
func NewHypothesis[T any](entries []Entry[T], cfg HypothesisConfig) (*Hypothesis, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	if err := checkNames(names); err != nil {
		return nil, err
	}
	h := &Hypothesis{cfg: cfg.withDefaults(), names: names, winner: -1, done: map[string]bool{}}
	attr := map[string]int{}
	for _, e := range entries {
		for i, a := range e.Attrs {
			if a.Key == "" {
				return nil, fmt.Errorf("%w: %s: attribute %d has no key", ErrBadAttr, e.Name, i)
			}
			if slices.ContainsFunc(e.Attrs[:i], func(b Attr) bool { return b.Key == a.Key }) {
				return nil, fmt.Errorf("%w: %s: %q given twice", ErrBadAttr, e.Name, a.Key)
			}
			if _, ok := attr[a.Key]; !ok {
				attr[a.Key] = len(h.keys)
				h.keys = append(h.keys, a.Key)
				h.values = append(h.values, nil)
			}
		}
	}
	combo := map[string]int{}
	for c, e := range entries {
		if len(e.Attrs) != len(h.keys) {
			for _, k := range h.keys {
				if _, ok := e.Attr(k); !ok {
					return nil, fmt.Errorf("%w: %s has no attribute %q", ErrBadAttr, e.Name, k)
				}
			}
		}
		v := make([]int, len(h.keys))
		for _, a := range e.Attrs {
			j := attr[a.Key]
			x := slices.Index(h.values[j], a.Value)
			if x < 0 {
				x = len(h.values[j])
				h.values[j] = append(h.values[j], a.Value)
			}
			v[j] = x
		}
		h.vals = append(h.vals, v)
		sig := h.sig(c, -1)
		if d, ok := combo[sig]; ok {
			return nil, fmt.Errorf("%w: %s and %s have the same attributes", ErrDuplicate, names[d], e.Name)
		}
		combo[sig] = c
	}
	n, m := len(entries), len(h.keys)
	h.alive, h.global = make([]bool, n), make([]float64, n)
	for c := range n {
		h.alive[c], h.global[c] = true, math.NaN()
	}
	h.hyp, h.conf, h.stuck = make([]int, m), make([]int, m), make([]bool, m)
	for j := range m {
		h.hyp[j] = -1
	}
	h.plan()
	return h, nil
}

// Config returns h's configuration, defaults filled in.
func (h *Hypothesis) Config() HypothesisConfig { return h.cfg }

// Next returns the implementation to run for the next call on this rank.
// Once every measurement of the batch is recorded it returns ("", true)
// until Evaluate; after the selection it returns the winner, and false,
// forever.
func (h *Hypothesis) Next() (name string, batchDone bool) {
	if h.winner >= 0 {
		return h.names[h.winner], false
	}
	if h.batch.done() || h.batch.probing() {
		return "", true
	}
	return h.batch.pending(), false
}

// Record reports that the call Next asked for, name, took seconds on this
// rank. It refuses (ErrUnexpectedRecord) a name other than Next's and a
// time that is negative, infinite or NaN, and then counts nothing: Next
// asks for the same call again. After the selection it ignores every call.
func (h *Hypothesis) Record(name string, seconds float64) error {
	if h.winner >= 0 {
		return nil
	}
	return h.batch.record(name, seconds)
}

// Local returns the implementations of the current batch and this rank's
// filtered mean of each (NaN if not yet measured): the vector every rank
// reduces with MAX before Evaluate. After the selection both are nil.
func (h *Hypothesis) Local() (names []string, means []float64) {
	if h.winner >= 0 {
		return nil, nil
	}
	if h.batch.probing() {
		return slices.Clone(h.batch.names), h.batch.probes()
	}
	return slices.Clone(h.batch.names), h.batch.local(h.cfg.Filter)
}

// Evaluate takes globalMax, the element-wise maximum of every rank's Local
// for the batch just measured, makes every comparison the measurements so
// far allow, updates the hypotheses, prunes, and plans the next batch. It
// returns the winner and true once the selection is over. It refuses
// (ErrNotReady) an evaluation while the batch is being measured or after
// the selection, and (ErrBadReduction) a vector of the wrong length or
// with a value that is not a finite non-negative time; a refusal changes
// nothing.
func (h *Hypothesis) Evaluate(globalMax []float64) (winner string, done bool, err error) {
	switch {
	case h.winner >= 0:
		return "", false, fmt.Errorf("%w: selection over, %s won", ErrNotReady, h.names[h.winner])
	case h.batch.probing():
		return "", false, h.drop(globalMax)
	case !h.batch.done():
		return "", false, fmt.Errorf("%w: %d of %d calls of the batch measured", ErrNotReady, h.batch.k, h.batch.total())
	}
	if err := checkReduced(globalMax, len(h.members)); err != nil {
		return "", false, err
	}
	h.batches++
	h.calls += h.batch.k + h.batch.spent
	parts := make([]string, len(h.members))
	for i, c := range h.members {
		h.global[c] = globalMax[i]
		parts[i] = h.names[c] + " " + secs(globalMax[i])
	}
	h.logf("batch %d reduced (max over ranks of the filtered means): %s", h.batches, strings.Join(parts, ", "))
	h.batch, h.members = campaign{}, nil
	h.compare()
	h.prune()
	h.plan()
	if h.winner >= 0 {
		return h.names[h.winner], true, nil
	}
	return "", false, nil
}

// drop takes out of the batch the members whose quickest probe reaches
// DropRatio times the batch's least (campaign.drop): their probe stands as
// their reduced time, enough to lose every comparison they take part in.
func (h *Hypothesis) drop(globalMax []float64) error {
	before := slices.Clone(h.batch.names)
	dropped, probes, err := h.batch.drop(globalMax)
	if err != nil {
		return err
	}
	h.batches++
	members := h.members[:0]
	for i, c := range h.members {
		if j := slices.Index(dropped, before[i]); j >= 0 {
			h.global[c] = probes[j]
			continue
		}
		members = append(members, c)
	}
	h.members = members
	if note := h.batch.dropNote(dropped, probes); note != "" {
		h.logf("batch %d: %s", h.batches, note)
	}
	return nil
}

// Calls returns the number of calls recorded during selection.
func (h *Hypothesis) Calls() int { return h.calls + h.batch.k + h.batch.spent }

// Explain returns what the selection did so far, one line per event:
// each batch planned and measured, each comparison with the hypothesis it
// formed or changed and its confidence, each pruning and why, each
// attribute left unsettled, and the winner.
func (h *Hypothesis) Explain() []string { return slices.Clone(h.log) }

func (h *Hypothesis) logf(format string, args ...any) {
	h.log = append(h.log, fmt.Sprintf(format, args...))
}

func secs(s float64) string { return strconv.FormatFloat(s, 'g', 3, 64) + " s" }

// sig is the key of implementation c's values of every attribute but j
// (-1: all of them), prefixed with j: the identity of the set for j that
// c belongs to.
func (h *Hypothesis) sig(c, j int) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(j))
	for i, v := range h.vals[c] {
		b.WriteByte(':')
		if i != j {
			b.WriteString(strconv.Itoa(v))
		}
	}
	return b.String()
}

// sets returns the sets for attribute j among the implementations left,
// those of two or more, in the order of their first implementation.
func (h *Hypothesis) sets(j int) (keys []string, sets [][]int) {
	at := map[string]int{}
	for c, ok := range h.alive {
		if !ok {
			continue
		}
		k := h.sig(c, j)
		i, seen := at[k]
		if !seen {
			i = len(sets)
			at[k] = i
			keys, sets = append(keys, k), append(sets, nil)
		}
		sets[i] = append(sets[i], c)
	}
	for i := 0; i < len(sets); {
		if len(sets[i]) < 2 {
			keys, sets = slices.Delete(keys, i, i+1), slices.Delete(sets, i, i+1)
			continue
		}
		i++
	}
	return keys, sets
}

// left returns the values of attribute j the implementations left have,
// in value order.
func (h *Hypothesis) left(j int) []int {
	seen := make([]bool, len(h.values[j]))
	for c, ok := range h.alive {
		if ok {
			seen[h.vals[c][j]] = true
		}
	}
	var out []int
	for v, ok := range seen {
		if ok {
			out = append(out, v)
		}
	}
	return out
}

func (h *Hypothesis) measured(c int) bool   { return !math.IsNaN(h.global[c]) }
func (h *Hypothesis) unmeasured(c int) bool { return math.IsNaN(h.global[c]) }

// where describes the values of c's attributes other than j, leaving out
// those that have one value in the whole table.
func (h *Hypothesis) where(c, j int) string {
	var parts []string
	for i, v := range h.vals[c] {
		if i != j && len(h.values[i]) > 1 {
			parts = append(parts, h.keys[i]+"="+h.values[i][v])
		}
	}
	if len(parts) == 0 {
		return "the only combination"
	}
	return strings.Join(parts, " ")
}

func (h *Hypothesis) list(cs []int) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = h.names[c]
	}
	return strings.Join(out, ", ")
}

// compare evaluates every set, of every attribute with values to choose
// from, that is complete and not yet evaluated, in attribute order.
func (h *Hypothesis) compare() {
	for j := range h.keys {
		if len(h.left(j)) < 2 {
			continue
		}
		keys, sets := h.sets(j)
		for i, set := range sets {
			if h.done[keys[i]] || slices.ContainsFunc(set, h.unmeasured) {
				continue
			}
			h.done[keys[i]] = true
			h.comparisons += len(set) - 1
			best := set[0]
			parts := make([]string, len(set))
			for x, c := range set {
				if h.global[c] < h.global[best] {
					best = c
				}
				parts[x] = h.names[c] + " " + secs(h.global[c])
			}
			w := h.vals[best][j]
			head := fmt.Sprintf("%s at %s: %s wins (%s)", h.keys[j], h.where(best, j), h.values[j][w], strings.Join(parts, "; "))
			h.logf("%s; %s", head, h.set(j, w))
		}
	}
}

// set updates attribute j's hypothesis with a set won by value w, as
// ADCL_hypothesis_set does, and describes the change.
func (h *Hypothesis) set(j, w int) string {
	key := h.keys[j]
	switch {
	case h.hyp[j] < 0:
		h.hyp[j], h.conf[j] = w, 1
		return fmt.Sprintf("hypothesis %s=%s, confidence 1", key, h.values[j][w])
	case h.hyp[j] == w:
		h.conf[j]++
		return fmt.Sprintf("hypothesis %s=%s confirmed, confidence %d", key, h.values[j][w], h.conf[j])
	}
	h.conf[j]--
	old := h.values[j][h.hyp[j]]
	if h.conf[j] > 0 {
		return fmt.Sprintf("against hypothesis %s=%s, confidence %d", key, old, h.conf[j])
	}
	h.hyp[j] = -1
	return fmt.Sprintf("against hypothesis %s=%s, confidence 0: hypothesis cleared", key, old)
}

// prune removes, for every attribute whose hypothesis reached the
// required confidence, the implementations without its value (seed 003
// §III, ADCL_hypothesis_shrinklist_byattr).
func (h *Hypothesis) prune() {
	before := make([]int, len(h.keys))
	for j := range h.keys {
		before[j] = len(h.left(j))
	}
	for j, key := range h.keys {
		v := h.hyp[j]
		if v < 0 || h.conf[j] < h.cfg.ReqConfidence || len(h.left(j)) < 2 {
			continue
		}
		var out []int
		kept := false
		for c, ok := range h.alive {
			if ok && h.vals[c][j] != v {
				out = append(out, c)
			} else if ok {
				kept = true
			}
		}
		if !kept {
			// Another attribute settled in this same evaluation left no
			// implementation with v (a combination that does not exist).
			h.logf("%s=%s reached confidence %d, but no implementation left has it: hypothesis dropped", key, h.values[j][v], h.conf[j])
			h.hyp[j], h.conf[j] = -1, 0
			continue
		}
		for _, c := range out {
			h.alive[c] = false
		}
		h.logf("%s=%s settled (confidence %d of %d): pruned %d implementations without it: %s",
			key, h.values[j][v], h.conf[j], h.cfg.ReqConfidence, len(out), h.list(out))
	}
	for j, key := range h.keys {
		left := h.left(j)
		if v := h.hyp[j]; v >= 0 && !slices.Contains(left, v) {
			h.logf("%s: hypothesis %s=%s no longer possible after pruning: cleared", key, key, h.values[j][v])
			h.hyp[j], h.conf[j] = -1, 0
		}
		if before[j] > 1 && len(left) == 1 && h.hyp[j] != left[0] {
			h.logf("%s: only %s left after pruning", key, h.values[j][left[0]])
		}
	}
}

// plan forms the next batch, or ends the selection.
func (h *Hypothesis) plan() {
	var alive []int
	for c, ok := range h.alive {
		if ok {
			alive = append(alive, c)
		}
	}
	if len(alive) == 1 {
		h.finish(alive[0], "the only implementation left")
		return
	}
	// Unsettled attributes, fewest values left first.
	var order []int
	nleft := make([]int, len(h.keys))
	for j := range h.keys {
		if nleft[j] = len(h.left(j)); nleft[j] > 1 {
			order = append(order, j)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(nleft[a], nleft[b]) })
	cur := make([]int, len(h.keys))
	for j := range h.keys {
		left := h.left(j)
		cur[j] = left[0]
		if slices.Contains(left, h.hyp[j]) {
			cur[j] = h.hyp[j]
		}
	}
	for _, a := range order {
		_, sets := h.sets(a)
		var open [][]int
		for _, set := range sets {
			if slices.ContainsFunc(set, h.unmeasured) {
				open = append(open, set)
			}
		}
		if len(open) == 0 {
			if !h.stuck[a] {
				h.stuck[a] = true
				state := "no hypothesis"
				if h.hyp[a] >= 0 {
					state = fmt.Sprintf("hypothesis %s=%s at confidence %d of %d", h.keys[a], h.values[a][h.hyp[a]], h.conf[a], h.cfg.ReqConfidence)
				}
				h.logf("%s: no comparison left to make, %s: left unsettled", h.keys[a], state)
			}
			continue
		}
		// Nearest the current values first, so comparisons are made
		// where the winner is likely to be; among equals, as ADCL's
		// next_attr_combination counts, the attribute with the next
		// fewest values varies fastest, which makes a batch of two
		// sets a grid that also compares that attribute.
		rank := func(set []int) []int {
			c := set[0]
			key := []int{0}
			for i := len(order) - 1; i >= 0; i-- {
				if j := order[i]; j != a {
					r := 0
					if v := h.vals[c][j]; v != cur[j] {
						key[0]++
						r = v + 1
					}
					key = append(key, r)
				}
			}
			return key
		}
		slices.SortStableFunc(open, func(x, y []int) int { return slices.Compare(rank(x), rank(y)) })
		need := h.cfg.ReqConfidence
		if h.hyp[a] >= 0 {
			need -= h.conf[a]
		}
		open = open[:min(len(open), max(1, need))]
		var at []string
		pick := make([]bool, len(h.names))
		for _, set := range open {
			at = append(at, h.where(set[0], a))
			for _, c := range set {
				pick[c] = pick[c] || h.unmeasured(c)
			}
		}
		h.start(pick, fmt.Sprintf("%s at %s", h.keys[a], strings.Join(at, "; ")))
		return
	}
	pick := make([]bool, len(h.names))
	some := false
	for _, c := range alive {
		pick[c] = h.unmeasured(c)
		some = some || pick[c]
	}
	if some {
		h.start(pick, fmt.Sprintf("no attribute left to compare: the %d implementations left, as by brute force", len(alive)))
		return
	}
	best := alive[0]
	for _, c := range alive {
		if h.global[c] < h.global[best] {
			best = c
		}
	}
	h.finish(best, fmt.Sprintf("the fastest of the %d implementations left", len(alive)))
}

// start begins a batch of the implementations pick marks, in table order.
func (h *Hypothesis) start(pick []bool, why string) {
	var names []string
	for c, ok := range pick {
		if ok {
			h.members = append(h.members, c)
			names = append(names, h.names[c])
		}
	}
	h.batch = newCampaign(names, h.cfg.measuring())
	h.logf("batch %d: %s; measuring %d implementations × %d calls: %s",
		h.batches+1, why, len(names), h.cfg.Samples, strings.Join(names, ", "))
}

// finish ends the selection with c.
func (h *Hypothesis) finish(c int, why string) {
	h.winner = c
	n := 0
	for x := range h.names {
		if h.measured(x) {
			n++
		}
	}
	t := ""
	if h.measured(c) {
		t = " (" + secs(h.global[c]) + ")"
	}
	h.logf("winner: %s%s, %s; %d of %d implementations measured, %d calls, %d reductions",
		h.names[c], t, why, n, len(h.names), h.calls, h.batches)
}
