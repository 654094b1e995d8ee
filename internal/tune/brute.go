package tune

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// DefaultSamples is the default number of measurements of each
// implementation, BruteConfig.Samples and HypothesisConfig.Samples.
const DefaultSamples = 10

// Errors of the ADCL selectors, BruteForce and Hypothesis.
var (
	// ErrNoCandidates: a selector over no implementation.
	ErrNoCandidates = errors.New("tune: no candidates")
	// ErrUnexpectedRecord: Record of a call the selector did not ask for,
	// or of a time that is not a finite non-negative number of seconds.
	ErrUnexpectedRecord = errors.New("tune: unexpected record")
	// ErrNotReady: Decide or Evaluate while measurements are pending, or
	// once the selection is over.
	ErrNotReady = errors.New("tune: no measurements to decide on")
	// ErrBadReduction: a reduced vector of the wrong length, or with a
	// value that is not a finite non-negative time.
	ErrBadReduction = errors.New("tune: bad reduced vector")
)

// BruteConfig sets a BruteForce. The zero value is valid: each zero field
// takes its default.
type BruteConfig struct {
	// Samples is how many calls measure each implementation (default 10,
	// as in seed 003 §II-A). Must not be negative.
	Samples int
	// Filter is the outlier filter applied to each implementation's
	// samples on each rank.
	Filter FilterConfig
	// Consecutive measures each implementation Samples times in a row,
	// ADCL's order, instead of round robin (see campaign).
	Consecutive bool
	// Probe is how many of each implementation's samples a round-robin
	// campaign takes before it drops the hopeless (default 3); DropRatio
	// how many times the fastest's an implementation's quickest probe
	// must take on its slowest rank to be dropped (default 2; +Inf never
	// drops). Dropping costs one more reduction. Probe must not be
	// negative; DropRatio must exceed 1.
	Probe     int
	DropRatio float64
}

// Defaults of BruteConfig's early drop.
const (
	DefaultProbe     = 3
	DefaultDropRatio = 2.0
)

// Validate reports every field outside its range, or nil. Zero fields are
// valid: they take their defaults.
func (c BruteConfig) Validate() error {
	var errs []error
	if c.Samples < 0 {
		errs = append(errs, fmt.Errorf("tune: Samples %d is negative", c.Samples))
	}
	if c.Probe < 0 {
		errs = append(errs, fmt.Errorf("tune: Probe %d is negative", c.Probe))
	}
	if math.IsNaN(c.DropRatio) || c.DropRatio != 0 && c.DropRatio <= 1 {
		errs = append(errs, fmt.Errorf("tune: DropRatio %v does not exceed 1", c.DropRatio))
	}
	errs = append(errs, c.Filter.Validate())
	return errors.Join(errs...)
}

func (c BruteConfig) withDefaults() BruteConfig {
	if c.Samples == 0 {
		c.Samples = DefaultSamples
	}
	if c.Probe == 0 {
		c.Probe = DefaultProbe
	}
	if c.DropRatio == 0 {
		c.DropRatio = DefaultDropRatio
	}
	c.Filter = c.Filter.withDefaults()
	return c
}

// campaign measures a list of implementations Samples times each, round
// robin by default: call k runs names[k mod len(names)]. Every rank
// derives the same sequence from the list, so they agree on each call
// without talking. Round robin rather than each implementation N times in
// a row (ADCL's order, consecutive) spreads a slow spell of the machine,
// or the job's warm-up, over all of them, one sample each, where the
// outlier filter drops it, instead of on consecutive samples of one
// implementation where it would exceed the outlier fraction and count
// against that one alone. In a row, each implementation is measured after
// itself: what one leaves behind (skew between the ranks, messages still
// unexpected, caches) is its own, not its predecessor's.
//
// A round-robin campaign with a probe drops the hopeless early: after
// probe samples of each implementation it waits for a reduction of each
// one's quickest probe (the least a stall can spoil), and those whose
// maximum over the ranks reaches dropRatio times the least go no further
// (seed 003's selections spent most of their calls on implementations
// 4–8 times the best).
type campaign struct {
	names       []string
	samples     [][]float64
	n           int // samples per implementation
	k           int // calls recorded
	consecutive bool
	probe       int     // samples before the drop; 0: no drop
	dropRatio   float64 // how far behind the fastest a probe drops
	probed      bool    // the drop's reduction has been made
	spent       int     // calls recorded of implementations dropped
}

func newCampaign(names []string, cfg BruteConfig) campaign {
	c := campaign{names: names, samples: make([][]float64, len(names)), n: cfg.Samples, consecutive: cfg.Consecutive}
	if !cfg.Consecutive && cfg.Probe < cfg.Samples && len(names) > 1 && !math.IsInf(cfg.DropRatio, 1) {
		c.probe, c.dropRatio = cfg.Probe, cfg.DropRatio
	}
	return c
}

// probing reports whether the campaign waits for its drop's reduction.
func (c *campaign) probing() bool {
	return c.probe > 0 && !c.probed && c.k == c.probe*len(c.names)
}

// probes returns each implementation's quickest probe on this rank: the
// vector reduced with MAX before drop.
func (c *campaign) probes() []float64 {
	out := make([]float64, len(c.names))
	for i, s := range c.samples {
		out[i] = slices.Min(s)
	}
	return out
}

// drop takes out the implementations whose reduced probe reaches
// dropRatio times the least, and returns their names with their probes.
func (c *campaign) drop(globalMax []float64) (dropped []string, probes []float64, err error) {
	if !c.probing() {
		return nil, nil, fmt.Errorf("%w: no drop is due", ErrNotReady)
	}
	if err := checkReduced(globalMax, len(c.names)); err != nil {
		return nil, nil, err
	}
	best := slices.Min(globalMax)
	names, samples := c.names[:0:0], c.samples[:0:0]
	for i, x := range globalMax {
		if x >= c.dropRatio*best && x > 0 {
			dropped, probes = append(dropped, c.names[i]), append(probes, x)
			continue
		}
		names, samples = append(names, c.names[i]), append(samples, c.samples[i])
	}
	c.names, c.samples, c.probed = names, samples, true
	c.spent += c.probe * len(dropped)
	c.k = c.probe * len(names)
	return dropped, probes, nil
}

// index returns the position in names of call k's implementation.
func (c *campaign) index(k int) int {
	if c.consecutive {
		return k / c.n
	}
	return k % len(c.names)
}

// total is the number of calls the campaign runs.
func (c *campaign) total() int { return c.n * len(c.names) }

// done reports whether every call has been recorded.
func (c *campaign) done() bool { return c.k >= c.total() }

// dropNote describes a drop for Explain, or "" when nothing was dropped.
func (c *campaign) dropNote(dropped []string, probes []float64) string {
	if len(dropped) == 0 {
		return ""
	}
	parts := make([]string, len(dropped))
	for i, n := range dropped {
		parts[i] = n + " " + secs(probes[i])
	}
	return fmt.Sprintf("dropped after %d calls each, their quickest probe (max over ranks) %gx the fastest's or more: %s",
		c.probe, c.dropRatio, strings.Join(parts, ", "))
}

// pending returns the implementation of the next call, or "" when done
// or waiting for the drop's reduction.
func (c *campaign) pending() string {
	if c.done() || c.probing() {
		return ""
	}
	return c.names[c.index(c.k)]
}

// record files the time of the pending call.
func (c *campaign) record(name string, seconds float64) error {
	want := c.pending()
	switch {
	case want == "":
		return fmt.Errorf("%w: %s: every call of the batch is measured", ErrUnexpectedRecord, name)
	case name != want:
		return fmt.Errorf("%w: %s, want %s", ErrUnexpectedRecord, name, want)
	case !validTime(seconds):
		return fmt.Errorf("%w: %s took %v s", ErrUnexpectedRecord, name, seconds)
	}
	i := c.index(c.k)
	c.samples[i] = append(c.samples[i], seconds)
	c.k++
	return nil
}

// local returns each implementation's filtered mean on this rank.
func (c *campaign) local(f FilterConfig) []float64 {
	out := make([]float64, len(c.names))
	for i, s := range c.samples {
		out[i], _ = FilteredMean(s, f)
	}
	return out
}

func validTime(s float64) bool { return s >= 0 && !math.IsInf(s, 1) } // false for NaN

// checkReduced checks a reduced vector against the n values it reduces.
func checkReduced(v []float64, n int) error {
	if len(v) != n {
		return fmt.Errorf("%w: %d values, want %d", ErrBadReduction, len(v), n)
	}
	for i, x := range v {
		if !validTime(x) {
			return fmt.Errorf("%w: value %d is %v", ErrBadReduction, i, x)
		}
	}
	return nil
}

// argmin returns the index of the smallest of v, the first of equals.
func argmin(v []float64) int {
	b := 0
	for i, x := range v {
		if x < v[b] {
			b = i
		}
	}
	return b
}

// BruteForce is ADCL's brute-force selection (seed 003 §II-A): every
// implementation is measured Samples times, each rank filters its own
// samples (FilteredMean), one reduction takes the maximum of each
// implementation's filtered mean over the ranks — a collective operation
// is as slow as its slowest rank — and the implementation with the least
// maximum wins for good.
//
// A BruteForce is pure and deterministic: the caller runs what Next says,
// measures this rank's time and passes it to Record; when Next reports
// done it reduces Local with MAX across the ranks (one allreduce for the
// whole decision) and passes the result to Decide. Every rank that builds
// it from the same names and config runs the same calls. Selection costs
// exactly Samples·len(names) calls and one reduction; a single name wins
// at once, without measurement. A BruteForce is not safe for concurrent
// use.
type BruteForce struct {
	cfg    BruteConfig
	m      campaign
	winner string
}

// NewBruteForce returns a BruteForce over names, measured in their order.
// It refuses no names (ErrNoCandidates), an empty name (ErrNoName), a name
// given twice (ErrDuplicate) and an invalid cfg.
func NewBruteForce(names []string, cfg BruteConfig) (*BruteForce, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkNames(names); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &BruteForce{cfg: cfg, m: newCampaign(append([]string(nil), names...), cfg)}
	if len(names) == 1 {
		b.winner = names[0]
	}
	return b, nil
}

func checkNames(names []string) error {
	if len(names) == 0 {
		return ErrNoCandidates
	}
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		if n == "" {
			return fmt.Errorf("%w: candidate %d", ErrNoName, i)
		}
		if seen[n] {
			return fmt.Errorf("%w: %s", ErrDuplicate, n)
		}
		seen[n] = true
	}
	return nil
}

// Config returns b's configuration, defaults filled in.
func (b *BruteForce) Config() BruteConfig { return b.cfg }

// Next returns the implementation to run for the next call on this rank.
// Once every measurement is recorded it returns ("", true) until Decide;
// after Decide it returns the winner, and false, forever.
func (b *BruteForce) Next() (name string, done bool) {
	if b.winner != "" {
		return b.winner, false
	}
	if b.m.done() || b.m.probing() {
		return "", true
	}
	return b.m.pending(), false
}

// Dropping reports whether the reduction due is the early drop's: reduce
// Local with MAX and pass the result to Drop, not Decide.
func (b *BruteForce) Dropping() bool { return b.winner == "" && b.m.probing() }

// Drop takes out of the campaign the implementations whose quickest probe
// (maximum over the ranks) reaches DropRatio times the least, from
// globalMax, the element-wise maximum of every rank's Local, and returns
// them with their probes. Every rank passes the same vector, so every
// rank goes on with the same names (Names).
func (b *BruteForce) Drop(globalMax []float64) (dropped []string, probes []float64, err error) {
	return b.m.drop(globalMax)
}

// DropNote describes the last Drop for Explain ("" when it dropped
// nothing).
func (b *BruteForce) DropNote(dropped []string, probes []float64) string {
	return b.m.dropNote(dropped, probes)
}

// Names returns the implementations still in the campaign, in the order
// of Local's vector.
func (b *BruteForce) Names() []string { return slices.Clone(b.m.names) }

// Record reports that the call Next asked for, name, took seconds on this
// rank. It refuses (ErrUnexpectedRecord) a name other than Next's and a
// time that is negative, infinite or NaN, and then counts nothing: Next
// asks for the same call again. After Decide it ignores every call.
func (b *BruteForce) Record(name string, seconds float64) error {
	if b.winner != "" {
		return nil
	}
	return b.m.record(name, seconds)
}

// Local returns this rank's filtered mean of each implementation, in the
// order of Names: the vector every rank reduces with MAX before Decide;
// while Dropping, each one's quickest probe instead. An implementation
// not yet measured has NaN.
func (b *BruteForce) Local() []float64 {
	if b.Dropping() {
		return b.m.probes()
	}
	return b.m.local(b.cfg.Filter)
}

// Decide picks the implementation of the least reduced maximum, the first
// of equals, from globalMax, the element-wise maximum of every rank's
// Local. Every rank passes the same vector, so every rank picks the same.
// It refuses (ErrNotReady) a decision before every measurement is
// recorded or after the decision, and (ErrBadReduction) a vector of the
// wrong length or with a value that is not a finite non-negative time.
func (b *BruteForce) Decide(globalMax []float64) (winner string, err error) {
	switch {
	case b.winner != "":
		return "", fmt.Errorf("%w: already decided for %s", ErrNotReady, b.winner)
	case !b.m.done():
		return "", fmt.Errorf("%w: %d of %d calls measured", ErrNotReady, b.m.k, b.m.total())
	}
	if err := checkReduced(globalMax, len(b.m.names)); err != nil {
		return "", err
	}
	b.winner = b.m.names[argmin(globalMax)]
	return b.winner, nil
}

// Calls returns the number of calls recorded during selection.
func (b *BruteForce) Calls() int { return b.m.k + b.m.spent }
