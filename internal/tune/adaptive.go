package tune

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/commtune/commtune/internal/stats"
)

// The exploration methods of an Adaptive.
const (
	MethodBrute      = "brute"      // BruteForce: every implementation, Samples times
	MethodHypothesis = "hypothesis" // Hypothesis: one attribute at a time, pruning
	MethodLearn      = "learn"      // Race among the prior's first choices, then probes of the rest
)

// Defaults of AdaptiveConfig's drift watch.
const (
	DefaultWatchWindow  = 32
	DefaultDriftFactor  = 1.5
	DefaultDriftWindows = 2
	// DefaultProbeEvery is AdaptiveConfig.ProbeEvery's default.
	DefaultProbeEvery = 256
	// probeMargin is how far below the winner's baseline a probe's
	// figure must be to call a rematch: closer is within the noise of
	// two timed calls.
	probeMargin = 0.9
)

// AdaptiveConfig sets an Adaptive. The zero value is valid: each zero field
// takes its default.
type AdaptiveConfig struct {
	// Method is how a selection explores: MethodBrute (default),
	// MethodHypothesis or MethodLearn.
	Method string
	// First is the prior of MethodLearn: the candidates a selection races
	// first, in order; the others are probed, one turn at a time, once a
	// winner runs. Empty races every candidate. Names that are not
	// candidates are ignored.
	First []string
	// Race sets MethodLearn's race and the length of its probes' turns.
	Race RaceConfig
	// ProbeEvery is how many calls of MethodLearn's winner run between two
	// probes (default 256): each probe is one turn of the next candidate
	// not running, and a probe below 0.9 times the winner's baseline
	// calls a race between the two.
	ProbeEvery int
	// Hypothesis sets the measurements (Samples, Filter) of both methods and
	// the confidence the hypothesis method requires.
	Hypothesis HypothesisConfig
	// WatchWindow is how many calls of the winner make one window of the
	// drift watch (default 32), whose filtered mean (FilteredMean, as the
	// selection's samples; the maximum over the ranks) is compared with the
	// median window's since the decision. Each window costs one reduction of
	// one number.
	WatchWindow int
	// DriftFactor is how far above the baseline, the median of the recent
	// windows since the decision, a window's mean must be to count as
	// drifted (default 1.5).
	// Must be above 1.
	DriftFactor float64
	// DriftWindows is how many drifted windows in a row resume the
	// selection (default 2): one slow window is a hiccup, two a change.
	DriftWindows int
}

// Validate reports every field outside its range, or nil.
func (c AdaptiveConfig) Validate() error {
	errs := []error{c.Hypothesis.Validate(), c.Race.Validate()}
	switch c.Method {
	case "", MethodBrute, MethodHypothesis, MethodLearn:
	default:
		errs = append(errs, fmt.Errorf("tune: method %q: want %s, %s or %s", c.Method, MethodBrute, MethodHypothesis, MethodLearn))
	}
	if c.ProbeEvery < 0 {
		errs = append(errs, fmt.Errorf("tune: ProbeEvery %d is negative", c.ProbeEvery))
	}
	if c.WatchWindow < 0 {
		errs = append(errs, fmt.Errorf("tune: WatchWindow %d is negative", c.WatchWindow))
	}
	if c.DriftFactor != 0 && !(c.DriftFactor > 1) || math.IsInf(c.DriftFactor, 0) {
		errs = append(errs, fmt.Errorf("tune: DriftFactor %g: want a finite number above 1", c.DriftFactor))
	}
	if c.DriftWindows < 0 {
		errs = append(errs, fmt.Errorf("tune: DriftWindows %d is negative", c.DriftWindows))
	}
	return errors.Join(errs...)
}

func (c AdaptiveConfig) withDefaults() AdaptiveConfig {
	if c.Method == "" {
		c.Method = MethodBrute
	}
	c.Hypothesis = c.Hypothesis.withDefaults()
	c.Race = c.Race.withDefaults()
	if c.ProbeEvery == 0 {
		c.ProbeEvery = DefaultProbeEvery
	}
	if c.WatchWindow == 0 {
		c.WatchWindow = DefaultWatchWindow
	}
	if c.DriftFactor == 0 {
		c.DriftFactor = DefaultDriftFactor
	}
	if c.DriftWindows == 0 {
		c.DriftWindows = DefaultDriftWindows
	}
	return c
}

// reduction is what the vector an Adaptive asked to reduce stands for.
type reduction uint8

const (
	reduceNone     reduction = iota
	reduceDecision           // a BruteForce decision or a Hypothesis batch
	reduceWatch              // one window of the drift watch
	reduceProbe              // one probe turn of a candidate not running
)

// Adaptive carries one application-level selection over its whole life,
// beyond ADCL, which never revisits a choice: it explores with a
// BruteForce or a Hypothesis until a winner is chosen, then runs the
// winner while keeping a cheap running average of its time, one filtered
// mean per window of calls. The median of the recent windows since the
// decision is the baseline; when windows drift above it by DriftFactor,
// DriftWindows windows in a row, the selection starts again from scratch,
// measuring every candidate under the new conditions. (A winner that gets
// faster only lowers its baseline: the warm-up after a decision looks the
// same as a load that went away.)
//
// Like the selectors it drives, an Adaptive is pure and deterministic:
// the caller runs Next, measures this rank's time and passes it to Record;
// when Record returns a vector, the caller reduces it with MAX across the
// ranks and passes the result to Reduced. Every rank that builds it from
// the same entries and config, and records the same calls, asks for the
// same reductions at the same calls. It is not safe for concurrent use.
type Adaptive struct {
	cfg     AdaptiveConfig
	names   []string
	entries []Entry[struct{}] // names and attributes, to start a selection afresh

	brute *BruteForce
	hyp   *Hypothesis
	race  *Race

	first      []string  // MethodLearn's prior, the candidates only
	probes     []string  // the candidates a winner's probes visit, in turn
	probeNext  int       // the index in probes of the next probe
	probe      string    // the candidate of the probe under way, or ""
	probeK     int       // calls of the probe under way
	probeTimes []float64 // its timed calls
	sinceProbe int       // winner's calls since the last probe

	winner   string
	baseline float64 // the winner's reduced time when chosen
	means    map[string]float64
	pending  reduction
	batch    []string // the names of a pending hypothesis batch

	window     []float64 // the drift watch's samples of the current window
	history    []float64 // the watch's recent undrifted windows, oldest first
	drifted    int       // drifted windows in a row
	selections int       // selections completed
	calls      int       // calls measured by the latest selection
	log        []string
}

// NewAdaptive returns an Adaptive over entries, exploring at once. It
// refuses what NewBruteForce and NewHypothesis refuse, and an invalid cfg.
func NewAdaptive[T any](entries []Entry[T], cfg AdaptiveConfig) (*Adaptive, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Adaptive{cfg: cfg.withDefaults()}
	for _, e := range entries {
		a.names = append(a.names, e.Name)
		a.entries = append(a.entries, Entry[struct{}]{Name: e.Name, Attrs: slices.Clone(e.Attrs)})
	}
	for _, n := range a.cfg.First {
		if slices.Contains(a.names, n) && !slices.Contains(a.first, n) {
			a.first = append(a.first, n)
		}
	}
	if len(a.first) == 0 {
		a.first = slices.Clone(a.names)
	}
	if err := a.explore("selection starts", ""); err != nil {
		return nil, err
	}
	return a, nil
}

// Config returns a's configuration, defaults filled in.
func (a *Adaptive) Config() AdaptiveConfig { return a.cfg }

// explore starts a selection from scratch. MethodLearn races the prior's
// candidates and also, when it is not one of them, keep: the winner a
// drift or a probe calls into question.
func (a *Adaptive) explore(why, keep string) error {
	a.reopen()
	a.means = map[string]float64{}
	var err error
	switch a.cfg.Method {
	case MethodHypothesis:
		a.hyp, err = NewHypothesis(a.entries, a.cfg.Hypothesis)
		a.logf("%s: %s over %d implementations", why, a.cfg.Method, len(a.names))
	case MethodLearn:
		names := slices.Clone(a.first)
		if keep != "" && !slices.Contains(names, keep) {
			names = append(names, keep)
		}
		// A prior of one still races a second: a winner must have a
		// measured baseline for the watch and the probes to judge.
		for _, n := range a.names {
			if len(names) >= 2 {
				break
			}
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		a.race, err = NewRace(names, a.cfg.Race)
		a.logf("%s: race over %d of %d implementations: %s", why, len(names), len(a.names), strings.Join(names, ", "))
	default:
		a.brute, err = NewBruteForce(a.names, a.cfg.Hypothesis.measuring())
		a.logf("%s: %s over %d implementations", why, a.cfg.Method, len(a.names))
	}
	if err != nil {
		return err
	}
	if len(a.names) == 1 {
		a.decide(a.names[0], math.NaN())
	}
	return nil
}

// reopen drops the winner and whatever selection, watch window or probe
// was under way: a selection starts next.
func (a *Adaptive) reopen() {
	a.winner, a.baseline = "", 0
	a.brute, a.hyp, a.race, a.pending, a.batch, a.calls = nil, nil, nil, reduceNone, nil, 0
	a.window, a.drifted = a.window[:0], 0
	a.probe, a.probeK, a.probeTimes, a.sinceProbe = "", 0, nil, 0
}

// rematch races names alone (the winner and a probed candidate that
// looked faster), keeping what the earlier selection measured.
func (a *Adaptive) rematch(why string, names ...string) {
	a.reopen()
	a.race, _ = NewRace(names, a.cfg.Race) // cannot fail: candidates, distinct, config valid
	a.logf("%s: race between %s", why, strings.Join(names, " and "))
}

// Resume starts a on winner, chosen earlier (by another job) at baseline
// seconds, without exploring: the drift watch alone may resume the
// selection. It refuses a name that is not a candidate and a baseline that
// is not a finite positive time, and then leaves a exploring.
func (a *Adaptive) Resume(winner string, baseline float64) error {
	if !slices.Contains(a.names, winner) {
		return fmt.Errorf("%w: %q is not a candidate", ErrUnexpectedRecord, winner)
	}
	if !(baseline > 0) || math.IsInf(baseline, 1) {
		return fmt.Errorf("%w: baseline %g s", ErrUnexpectedRecord, baseline)
	}
	a.brute, a.hyp, a.race, a.pending, a.batch = nil, nil, nil, reduceNone, nil
	a.means = map[string]float64{winner: baseline}
	a.calls = 0
	a.logf("resumed on %s, chosen earlier at %s, without exploring", winner, secs(baseline))
	a.decide(winner, baseline)
	return nil
}

func (a *Adaptive) decide(winner string, baseline float64) {
	a.winner, a.baseline = winner, baseline
	a.brute, a.hyp, a.race = nil, nil, nil
	a.window, a.drifted, a.history = a.window[:0], 0, a.history[:0]
	a.selections++
	a.probes, a.probeNext, a.probe, a.sinceProbe = nil, 0, "", 0
	if a.cfg.Method == MethodLearn {
		// Those never raced first, then the prior's losers.
		for _, n := range a.names {
			if n != winner && !slices.Contains(a.first, n) {
				a.probes = append(a.probes, n)
			}
		}
		for _, n := range a.first {
			if n != winner {
				a.probes = append(a.probes, n)
			}
		}
	}
}

// Next returns the implementation to run for the next call.
func (a *Adaptive) Next() string {
	switch {
	case a.probe != "":
		return a.probe
	case a.winner != "":
		return a.winner
	case a.race != nil:
		name, _ := a.race.Next()
		return name
	case a.brute != nil:
		name, _ := a.brute.Next()
		return name
	default:
		name, _ := a.hyp.Next()
		return name
	}
}

// Exploring reports whether a selection is under way.
func (a *Adaptive) Exploring() bool { return a.winner == "" }

// Record reports that the call Next asked for, name, took seconds on this
// rank. When a reduction is due it returns this rank's vector: reduce it
// with MAX across the ranks and pass the result to Reduced before the next
// call. It refuses (ErrUnexpectedRecord) a name other than Next's, a bad
// time, and a record while a reduction is pending, and then counts nothing.
func (a *Adaptive) Record(name string, seconds float64) (local []float64, err error) {
	if a.pending != reduceNone {
		return nil, fmt.Errorf("%w: a reduction is pending", ErrUnexpectedRecord)
	}
	if want := a.Next(); name != want {
		return nil, fmt.Errorf("%w: %s ran, %s was due", ErrUnexpectedRecord, name, want)
	}
	if !validTime(seconds) || math.IsNaN(seconds) {
		return nil, fmt.Errorf("%w: time %g s", ErrUnexpectedRecord, seconds)
	}
	if a.probe != "" {
		if a.probeK > 0 { // the first call of a turn is not timed
			a.probeTimes = append(a.probeTimes, seconds)
		}
		if a.probeK++; a.probeK < a.cfg.Race.Turn {
			return nil, nil
		}
		a.pending = reduceProbe
		return []float64{RaceFigure(a.probeTimes)}, nil
	}
	if a.winner != "" {
		if math.IsNaN(a.baseline) {
			return nil, nil // a single candidate: nothing to watch for
		}
		if a.sinceProbe++; len(a.probes) > 0 && a.sinceProbe >= a.cfg.ProbeEvery {
			// The next call starts a probe; this one still counts below.
			a.probe, a.probeK, a.probeTimes, a.sinceProbe = a.probes[a.probeNext%len(a.probes)], 0, nil, 0
			a.probeNext++
		}
		a.window = append(a.window, seconds)
		if len(a.window) < a.cfg.WatchWindow {
			return nil, nil
		}
		// Filtered as the selection's samples were, so that the window
		// compares with the time the winner was chosen on, and an outlier
		// or two do not pass for a drift.
		mean, _ := FilteredMean(a.window, a.cfg.Hypothesis.Filter)
		a.pending = reduceWatch
		return []float64{mean}, nil
	}
	a.calls++
	if a.race != nil {
		if err := a.race.Record(name, seconds); err != nil {
			return nil, err
		}
		if _, due := a.race.Next(); due {
			a.pending = reduceDecision
			return a.race.Local(), nil
		}
		return nil, nil
	}
	if a.brute != nil {
		if err := a.brute.Record(name, seconds); err != nil {
			return nil, err
		}
		if _, done := a.brute.Next(); done {
			a.pending = reduceDecision
			return a.brute.Local(), nil
		}
		return nil, nil
	}
	if err := a.hyp.Record(name, seconds); err != nil {
		return nil, err
	}
	if _, done := a.hyp.Next(); done {
		a.pending = reduceDecision
		a.batch, local = a.hyp.Local()
		return local, nil
	}
	return nil, nil
}

// Reduced takes the element-wise maximum over the ranks of the vector
// Record returned. It reports whether a selection ended with it (a
// winner was chosen). A vector refused (ErrBadReduction, ErrNotReady)
// changes nothing.
func (a *Adaptive) Reduced(global []float64) (decided bool, err error) {
	switch a.pending {
	case reduceNone:
		return false, fmt.Errorf("%w: no reduction pending", ErrNotReady)
	case reduceWatch:
		if err := checkReduced(global, 1); err != nil {
			return false, err
		}
		a.pending = reduceNone
		a.watch(global[0])
		return false, nil
	case reduceProbe:
		if err := checkReduced(global, 1); err != nil {
			return false, err
		}
		a.pending = reduceNone
		probe := a.probe
		a.probe, a.probeTimes = "", nil
		a.means[probe] = global[0]
		if global[0] < probeMargin*a.baseline {
			a.rematch(fmt.Sprintf("probe of %s: %s against %s's %s", probe, secs(global[0]), a.winner, secs(a.baseline)),
				a.winner, probe)
		}
		return false, nil
	}
	if a.race != nil {
		names := a.race.Names()
		w, err := a.race.Reduced(global)
		if err != nil {
			return false, err
		}
		a.pending = reduceNone
		for i, n := range names {
			a.means[n] = global[i]
		}
		if w == "" {
			return false, nil
		}
		for _, line := range a.race.Explain() {
			a.logf("%s", line)
		}
		a.decide(w, global[slices.Index(names, w)])
		return true, nil
	}
	if a.brute != nil && a.brute.Dropping() {
		dropped, probes, err := a.brute.Drop(global)
		if err != nil {
			return false, err
		}
		a.pending = reduceNone
		for i, n := range dropped {
			a.means[n] = probes[i]
		}
		if note := a.brute.DropNote(dropped, probes); note != "" {
			a.logf("%s", note)
		}
		return false, nil
	}
	if a.brute != nil {
		names := a.brute.Names()
		w, err := a.brute.Decide(global)
		if err != nil {
			return false, err
		}
		a.pending = reduceNone
		parts := make([]string, len(names))
		for i, n := range names {
			a.means[n] = global[i]
			parts[i] = n + " " + secs(global[i])
		}
		a.logf("reduced (max over ranks of the filtered means): %s", strings.Join(parts, ", "))
		a.logf("%s wins after %d calls", w, a.calls)
		a.decide(w, global[slices.Index(names, w)])
		return true, nil
	}
	w, done, err := a.hyp.Evaluate(global)
	if err != nil {
		return false, err
	}
	a.pending = reduceNone
	for i, n := range a.batch {
		a.means[n] = global[i]
	}
	a.batch = nil
	if !done {
		return false, nil
	}
	for _, line := range a.hyp.Explain() {
		a.logf("%s", line)
	}
	a.logf("%s wins after %d calls", w, a.calls)
	a.decide(w, a.means[w])
	return true, nil
}

// watchHistory is how many recent undrifted windows the watch's baseline
// is the median of.
const watchHistory = 15

// watch judges one window's reduced average and resumes the selection
// after DriftWindows drifted ones in a row. The baseline is the median of
// the recent windows that did not drift, the winner's typical time
// running alone: the time it was chosen on came from calls interleaved
// with the other candidates' (or from an earlier job), and the best
// window, the former baseline, sits at the bottom of the windows' spread,
// so that ordinary windows of a busy machine (1.5× the best on 8 ranks
// over 2 processors) read as drift.
func (a *Adaptive) watch(avg float64) {
	a.window = a.window[:0]
	if len(a.history) > 0 && avg > a.baseline*a.cfg.DriftFactor {
		a.drifted++
		a.logf("window of %d calls of %s averages %s against %s before (%d of %d drifted windows)",
			a.cfg.WatchWindow, a.winner, secs(avg), secs(a.baseline), a.drifted, a.cfg.DriftWindows)
		if a.drifted >= a.cfg.DriftWindows {
			// Cannot fail: the same entries and config built a selector before.
			_ = a.explore(fmt.Sprintf("%s drifted from %s to %s", a.winner, secs(a.baseline), secs(avg)), a.winner)
		}
		return
	}
	if len(a.history) == 0 {
		a.logf("watching %s: %s running alone (%s when chosen)", a.winner, secs(avg), secs(a.baseline))
	}
	a.drifted = 0
	if len(a.history) == watchHistory {
		a.history = append(a.history[:0], a.history[1:]...)
	}
	a.history = append(a.history, avg)
	a.baseline = stats.Median(a.history)
}

// Winner returns the implementation chosen and its reduced time: the time
// it was chosen on until the watch's first window, the baseline (the
// median recent window) after; "" while exploring.
func (a *Adaptive) Winner() (name string, seconds float64) { return a.winner, a.baseline }

// Calls returns the calls the latest selection measured: 0 for one
// resumed from an earlier job or still to start.
func (a *Adaptive) Calls() int { return a.calls }

// Selections returns how many selections have ended, a resumed one
// included.
func (a *Adaptive) Selections() int { return a.selections }

// Means returns the reduced time of each implementation the latest
// selection measured.
func (a *Adaptive) Means() map[string]float64 {
	m := make(map[string]float64, len(a.means))
	for k, v := range a.means {
		m[k] = v
	}
	return m
}

// Explain returns what happened, one line per event: selections started
// and why, reductions, the hypothesis selector's reasoning, winners and
// drifted windows.
func (a *Adaptive) Explain() []string { return slices.Clone(a.log) }

// maxLog bounds Explain: a watch that drifts for days keeps the latest.
const maxLog = 256

func (a *Adaptive) logf(format string, args ...any) {
	a.log = append(a.log, fmt.Sprintf(format, args...))
	if len(a.log) > maxLog {
		a.log = slices.Delete(a.log, 0, len(a.log)-maxLog)
	}
}
