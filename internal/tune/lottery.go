package tune

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Choice is one draw of a Selector: the implementation to run and the number
// of calls the draw stands for (its time-to-live). Every rank runs Impl for
// the next TTL calls of the same Key and only then chooses again (seed 001
// §6.1.1), so one draw, broadcast once, covers TTL calls.
type Choice struct {
	// Impl is the implementation's name, one of the candidates.
	Impl string
	// TTL is the number of calls the choice stands for; at least 1, and 0
	// only in the zero Choice returned for no candidates.
	TTL int
}

// Selector picks an implementation for each call of a decision and learns
// from the running times of the calls it picked.
type Selector interface {
	// Choose draws one of candidates for k. Candidates are in the caller's
	// order of preference: the first is what a fixed table would run, and
	// is what a key with no measurements runs. Names never measured for k
	// are added; names measured before but absent from candidates keep
	// their measurements and are not drawn. With no candidates Choose
	// returns the zero Choice (empty Impl, TTL 0) rather than panic.
	Choose(k Key, candidates []string) Choice
	// Record reports that one call of k ran impl in d.
	Record(k Key, impl string, d time.Duration)
}

// Defaults for a zero LotteryConfig field; the fields say why.
const (
	// DefaultAlpha is LotteryConfig.Alpha's default.
	DefaultAlpha = 0.8
	// DefaultWeight is LotteryConfig.Weight's default.
	DefaultWeight = 0.125
	// DefaultDriftRatio is LotteryConfig.DriftRatio's default.
	DefaultDriftRatio = 0.25
	// DefaultDriftCalls is LotteryConfig.DriftCalls's default.
	DefaultDriftCalls = 8
	// DefaultMaxTTL is LotteryConfig.MaxTTL's default.
	DefaultMaxTTL = 8
	// DefaultMinTTL is LotteryConfig.MinTTL's default.
	DefaultMinTTL = 1
	// DefaultMinSamples is LotteryConfig.MinSamples's default.
	DefaultMinSamples = 3
	// DefaultHopeless is LotteryConfig.Hopeless's default.
	DefaultHopeless = 4.0
	// DefaultRetry is LotteryConfig.Retry's default.
	DefaultRetry = 64
	// DefaultSettle is LotteryConfig.Settle's default.
	DefaultSettle = 16
)

// settleFloor is the least part of its exploration share a candidate
// keeps however many samples it has (LotteryConfig.Settle): enough that a
// rival the conditions came to favour is sampled again within a few
// hundred draws.
const settleFloor = 1.0 / 8

// LotteryConfig sets the lottery's policy. The zero value is valid: each
// zero field takes its default (the Default* constants), so callers set
// only what they change.
type LotteryConfig struct {
	// Alpha is the share of tickets the implementation with the lowest
	// average holds while others are worth exploring (seed 001 §6.1.2; 0.8
	// there and by default). 1 turns exploration off once two
	// implementations have been compared. Must be in (0, 1].
	Alpha float64
	// Weight is the weight of the newest sample in the exponential average
	// and variance, in (0, 1]. The default 1/8, as in TCP's smoothed
	// round-trip time (RFC 6298), remembers about the last 15 samples: with
	// 5 % noise the best's average stays within about 1.3 % (one σ) of its
	// mean, so a runner-up 5 % slower seldom passes it by chance (with 1/4
	// that happened often enough to cost about 1.5 % of calls), while a
	// sample 5× the average still raises it by half at once, past any
	// runner-up within 1.5×.
	Weight float64
	// DriftRatio is how far, as a fraction of the best's average, a sample
	// of the best must lie above or below it to count towards a drift
	// (default 0.25: five standard deviations of 5 % noise). +Inf turns
	// drift detection off. Must not be negative.
	DriftRatio float64
	// DriftCalls is how many consecutive samples of the best must drift, all
	// the same way, before the key is re-explored (default 8): each
	// implementation is then measured afresh once. Must not be negative.
	DriftCalls int
	// MaxTTL is the TTL of a choice holding every ticket (default 8); a
	// choice holding share s of the tickets stands for max(MinTTL, ⌊s·MaxTTL⌋)
	// calls. Must not be negative.
	MaxTTL int
	// MinTTL is the fewest calls any choice stands for, probes included
	// (default 1). Where switching implementations costs by itself (caches,
	// buffers and the placement of processes tuned to the last one), a
	// longer MinTTL lets the caller leave the first calls after a switch out
	// of the samples and still record the rest, and makes switches rarer.
	// Capped at MaxTTL. Must not be negative.
	MinTTL int
	// MinSamples is how many samples an implementation within Hopeless× of
	// the best needs before the two-standard-deviation bound excludes it
	// from exploration (default 3); until then it keeps a small share of
	// the exploration tickets, so one unlucky sample does not exclude a
	// contender for good. Must not be negative.
	MinSamples int
	// Hopeless is the ratio to the best's average beyond which a single
	// sample excludes an implementation from exploration (default 4). Must
	// exceed 1; +Inf leaves exclusion to the two-standard-deviation bound.
	Hopeless float64
	// Retry is how many draws of its key an excluded implementation waits
	// before it is measured again, once, doubling after each such retry
	// that leaves it excluded (default 64: a retry every 64, 128, 256 …
	// draws). One sample can exclude an implementation for good: a sample
	// taken while the job warms up, or during a slow spell the best was
	// spared, or before conditions changed in its favour. Retries bound
	// that loss, at a cost that halves each time: an implementation that
	// stays Hopeless× slower runs at most 1+⌊log2(D/Retry+1)⌋ calls in D
	// draws. Must not be negative.
	Retry int
	// Settle is how many samples another candidate takes as a rival (since
	// it was last the best, or measured afresh) before its exploration
	// share shrinks (default 16): with S such samples beyond that it keeps
	// Settle/S of the share its class gives it, never less than an eighth,
	// the rest going to the best. A former best whose average the
	// conditions left behind thus keeps its full share until its samples
	// show where it stands now. Exploring costs more than its
	// samples show — every switch of algorithm makes one call slow (up to
	// 9× at 1 MiB on 4 ranks), a call the samples leave out — and a rival
	// still behind after many samples is a near-tie, which sampling at the
	// full share only pays for on a noisy machine; a rival on few samples
	// (one unlucky first sample, or one re-explored after a drift, whose
	// fresh samples replace the old) keeps its full share. Must not be
	// negative.
	Settle int
	// Seed seeds the lottery's PCG generator: the same seed and the same
	// sequence of calls give the same choices.
	Seed uint64
}

// Validate reports every field outside its range, or nil. Zero fields are
// valid: they take their defaults.
func (c LotteryConfig) Validate() error {
	var errs []error
	unit := func(name string, v float64) {
		if math.IsNaN(v) || v < 0 || v > 1 {
			errs = append(errs, fmt.Errorf("tune: %s %v is outside (0, 1]", name, v))
		}
	}
	unit("Alpha", c.Alpha)
	unit("Weight", c.Weight)
	if math.IsNaN(c.DriftRatio) || c.DriftRatio < 0 {
		errs = append(errs, fmt.Errorf("tune: DriftRatio %v is negative or NaN", c.DriftRatio))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"DriftCalls", c.DriftCalls}, {"MaxTTL", c.MaxTTL}, {"MinTTL", c.MinTTL}, {"MinSamples", c.MinSamples}, {"Retry", c.Retry}, {"Settle", c.Settle}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("tune: %s %d is negative", f.name, f.v))
		}
	}
	if math.IsNaN(c.Hopeless) || (c.Hopeless != 0 && c.Hopeless <= 1) {
		errs = append(errs, fmt.Errorf("tune: Hopeless %v does not exceed 1", c.Hopeless))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field set to its default.
func (c LotteryConfig) withDefaults() LotteryConfig {
	if c.Alpha == 0 {
		c.Alpha = DefaultAlpha
	}
	if c.Weight == 0 {
		c.Weight = DefaultWeight
	}
	if c.DriftRatio == 0 {
		c.DriftRatio = DefaultDriftRatio
	}
	if c.DriftCalls == 0 {
		c.DriftCalls = DefaultDriftCalls
	}
	if c.MaxTTL == 0 {
		c.MaxTTL = DefaultMaxTTL
	}
	if c.MinTTL == 0 {
		c.MinTTL = DefaultMinTTL
	}
	c.MinTTL = min(c.MinTTL, c.MaxTTL)
	if c.MinSamples == 0 {
		c.MinSamples = DefaultMinSamples
	}
	if c.Hopeless == 0 {
		c.Hopeless = DefaultHopeless
	}
	if c.Retry == 0 {
		c.Retry = DefaultRetry
	}
	if c.Settle == 0 {
		c.Settle = DefaultSettle
	}
	return c
}

// Lottery is the lottery scheduler of seed 001 §6: each Choose deals
// tickets to the candidates from their measured running times and draws one.
//
// Tickets, for one key:
//   - Cold start: with nothing measured the first candidate runs. A lone
//     measurement ranks nothing, so the next draws go to the other
//     candidates until a second one is measured.
//   - The best, the candidate with the lowest average, holds Alpha of the
//     tickets (seed 001 §6.1.2); the rest goes to the others as below, or
//     to the best when none qualifies. Once measured, a rival with more
//     than Settle samples since it last led keeps only part of its share
//     (LotteryConfig.Settle), the rest going to the best.
//   - Untried first: while some candidate has never been measured, or not
//     since a re-exploration (stale), those share the rest evenly, so each
//     is touched once before any is judged.
//   - Then exploration is bounded (seed 001 §6.2: explore only within two
//     standard deviations of the best). With σ = √(Var_best + Var_other),
//     the spread of the difference between one run of each, another
//     implementation is excluded if its average exceeds Hopeless× the
//     best's; otherwise it is a contender if its average exceeds the best's
//     by at most 2σ; otherwise doubtful while it has fewer than MinSamples
//     samples (its variance then counts as at least the best's relative
//     variance), and excluded once it has them. Contenders share the rest
//     evenly; doubtful ones share doubtfulShare (a quarter) of it while
//     contenders exist, all of it otherwise. Doubtful ones keep an unlucky
//     first sample from excluding a contender for good, at the cost of at
//     most MinSamples-1 extra calls of each implementation that is indeed
//     slower.
//
// Hence the bound: an implementation whose average stays above Hopeless×
// (4×) the best's runs one call per exploration (from the cold start, or
// from a re-exploration): it is measured by a one-call draw and that
// sample excludes it. Excluded implementations are retried: Retry draws
// after its last sample (64 by default, doubling at each retry that leaves
// it excluded), an excluded implementation turns stale and is measured
// once more, so in D draws it runs at most 1+⌊log2(D/Retry+1)⌋ calls.
// (Implementations excluded by the two-standard-deviation bound stand on
// MinSamples samples or more: they wait for a re-exploration.)
//
// A choice's TTL is max(MinTTL, ⌊share·MaxTTL⌋) for its share of the
// tickets, "a function of the implementation's relative number of tickets"
// (seed 001 §6.1.1): with the defaults the best runs 6 calls per draw (8
// when it holds every ticket) and an exploration 1, since
// (1-Alpha)·MaxTTL < 2. While untried or stale candidates hold tickets,
// every choice lasts MinTTL calls: exploring costs the same calls, MinTTL
// per candidate, and ends sooner. (The bounds above count draws; each
// costs MinTTL calls.)
//
// Drift (beyond seed 001): a sample of the key's best (the candidate with
// the lowest average when the sample is recorded, if it has at least
// MinSamples samples) drifts when it lies more than DriftRatio above or
// below that implementation's average as it stood when the current run of
// drifting samples began. After DriftCalls consecutive drifting samples of
// the best, all one way (samples of other implementations neither count nor
// interrupt), the key is re-explored: every implementation's measurements
// turn stale, still ranking it until its next sample replaces them, and
// each is drawn once before exploration is bounded again. When only the
// best slows down, its average passes the runner-up's within a sample or
// two and the runner-up takes over, its samples matching its average, so
// nothing is re-explored. Re-exploration is for when the best keeps being
// wrong: when conditions changed for every implementation kept, and one
// excluded may now be fastest.
//
// The first Choose of a key after NewLottery or Restore is not drawn: it
// returns the best-known candidate, or the first candidate when none has
// been measured.
//
// A Lottery is safe for concurrent use.
type Lottery struct {
	cfg  LotteryConfig // with defaults
	mu   sync.Mutex
	rng  *rand.Rand
	keys map[Key]*keyState
	tick uint64 // counts key lookups: keyState.used
}

// maxKeys bounds the keys a Lottery learns about: the least recently used
// goes when a new one would pass it. A key is an operation, a number of
// ranks, a size class, commutativity and a transport mix, so a program
// calling every collective at every size on communicators of every size
// meets thousands; learning on each held a kilobyte or two, for good, and
// its memory grew as long as new ones came (a 30-minute soak of random
// calls grew 2 MiB a rank). A key learned again after going starts cold.
const maxKeys = 512

// keyState is one key's learning.
type keyState struct {
	impls map[string]*impl
	// cands are the candidates of the last Choose, deduplicated, in order;
	// shares is scratch space for their tickets.
	cands  []*impl
	shares []float64
	drawn  bool // a Choose has returned for this key
	// probing is set by tickets while untried or stale candidates hold
	// tickets: every choice then lasts one call.
	probing bool

	// Drift: the current run of drifting samples of the best, its
	// direction (+1 slower, -1 faster) and its generation, which tells
	// whose reference averages belong to this run.
	streak int
	dir    int
	gen    uint64

	draws uint64 // Choose calls so far
	used  uint64 // Lottery.tick when last looked up

	reexplored int // re-explorations so far, for tests
}

// impl is one implementation's learning for one key.
type impl struct {
	name string
	Stats
	// stale marks measurements from before a re-exploration: they still
	// rank the implementation, but it is drawn once more and its next
	// sample replaces them.
	stale bool
	// ref is the average that drifting samples are compared with, fixed
	// when the implementation's first sample of the current drift run
	// arrived; valid while refGen equals the key's gen.
	ref    float64
	refGen uint64
	// at is the key's draw count when the last sample arrived; retry is
	// how many draws after it an excluded implementation is retried (0:
	// LotteryConfig.Retry).
	at, retry uint64
	// rival counts its samples since it was last the best, or measured
	// afresh (LotteryConfig.Settle).
	rival int64
}

// NewLottery returns a Lottery with cfg's policy (zero fields take their
// defaults), or cfg's Validate error.
func NewLottery(cfg LotteryConfig) (*Lottery, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Lottery{
		cfg:  cfg,
		rng:  rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		keys: make(map[Key]*keyState),
	}, nil
}

// Config returns the policy in force, defaults filled in.
func (l *Lottery) Config() LotteryConfig { return l.cfg }

var _ Selector = (*Lottery)(nil)

func (l *Lottery) key(k Key) *keyState {
	l.tick++
	ks := l.keys[k]
	if ks == nil {
		l.evict(maxKeys - 1)
		ks = &keyState{impls: make(map[string]*impl)}
		l.keys[k] = ks
	}
	ks.used = l.tick
	return ks
}

// evict drops the least recently used keys until at most keep remain.
func (l *Lottery) evict(keep int) {
	if len(l.keys) <= keep {
		return
	}
	if len(l.keys) == keep+1 {
		var oldest Key
		first := true
		for k, ks := range l.keys {
			if first || ks.used < l.keys[oldest].used {
				oldest, first = k, false
			}
		}
		delete(l.keys, oldest)
		return
	}
	// Many at once (a restored state larger than the bound): by age.
	type aged struct {
		k    Key
		used uint64
	}
	all := make([]aged, 0, len(l.keys))
	for k, ks := range l.keys {
		all = append(all, aged{k, ks.used})
	}
	slices.SortFunc(all, func(a, b aged) int { return cmp.Compare(a.used, b.used) })
	for _, a := range all[:len(all)-keep] {
		delete(l.keys, a.k)
	}
}

func (ks *keyState) impl(name string) *impl {
	c := ks.impls[name]
	if c == nil {
		c = &impl{name: name}
		ks.impls[name] = c
	}
	return c
}

// setCandidates makes candidates the key's current candidate list, reusing
// the last one when it is the same (the usual case).
func (ks *keyState) setCandidates(candidates []string) {
	if len(candidates) == len(ks.cands) {
		same := true
		for i, name := range candidates {
			if ks.cands[i].name != name {
				same = false
				break
			}
		}
		if same {
			return
		}
	}
	ks.cands = ks.cands[:0]
	for _, name := range candidates {
		c := ks.impl(name)
		dup := false
		for _, d := range ks.cands {
			if d == c {
				dup = true
				break
			}
		}
		if !dup {
			ks.cands = append(ks.cands, c)
		}
	}
	ks.shares = make([]float64, len(ks.cands))
}

// best returns the index in ks.cands of the measured candidate with the
// lowest average (the first of equals), or -1. Only candidates with at
// least minSamples samples compete while any has that many: on a noisy
// machine one lucky sample would otherwise win the best's share of the
// tickets, and the TTL that comes with it, for a candidate no better
// than the rest.
func (ks *keyState) best(minSamples int) int {
	b, trusted := -1, false
	for i, c := range ks.cands {
		if c.Calls == 0 {
			continue
		}
		enough := c.Calls >= int64(minSamples) && !c.stale
		switch {
		case b < 0, enough && !trusted, enough == trusted && c.Avg < ks.cands[b].Avg:
			b, trusted = i, enough
		}
	}
	return b
}

// probe reports whether c is yet to be measured, or measured afresh.
func (c *impl) probe() bool { return c.Calls == 0 || c.stale }

// promising reports whether c, on fewer samples than the best b needs to
// lead, averages below b: it is measured first, as an untried one is, until
// it has enough samples to take the lead or shows it was lucky.
func (l *Lottery) promising(c, b *impl) bool {
	return c.Calls > 0 && c.Calls < int64(l.cfg.MinSamples) && !c.stale && c.Avg < b.Avg
}

// Exploration classes of a measured implementation other than the best.
const (
	excluded  = iota // no exploration tickets
	contender        // within the two-standard-deviation band: full share
	doubtful         // outside it on fewer than MinSamples samples: a small share
)

// doubtfulShare is the part of the exploration tickets that doubtful
// implementations share while contenders exist: enough to retry an
// implementation whose first sample was unlucky, little enough that the
// contenders, the likely winners, are sampled first.
const doubtfulShare = 0.25

// class sorts c, measured and not the best b, for exploration (seed 001
// §6.2: explore only within two standard deviations of the best).
func (l *Lottery) class(c, b *impl) int {
	if c.Avg > l.cfg.Hopeless*b.Avg {
		return excluded
	}
	v := c.Var
	few := c.Calls < int64(l.cfg.MinSamples)
	if few && b.Avg > 0 {
		// Too few samples to know c's spread: assume at least the best's
		// relative spread.
		v = max(v, b.Var*(c.Avg/b.Avg)*(c.Avg/b.Avg))
	}
	switch {
	case c.Avg-b.Avg <= 2*math.Sqrt(v+b.Var):
		return contender
	case few:
		return doubtful
	}
	return excluded
}

// tickets fills ks.shares for ks.cands and returns the best's index, or -1.
func (l *Lottery) tickets(ks *keyState) int {
	sh := ks.shares
	clear(sh)
	ks.probing = false
	b := ks.best(l.cfg.MinSamples)
	if b < 0 {
		for i := range sh {
			sh[i] = 1 / float64(len(sh))
		}
		ks.probing = true
		return b
	}
	measured, probes := 0, 0
	first := func(i int, c *impl) bool { return i != b && (c.probe() || l.promising(c, ks.cands[b])) }
	for i, c := range ks.cands {
		if c.Calls > 0 {
			measured++
		}
		if first(i, c) {
			probes++
		}
	}
	if probes > 0 {
		// Untried first. A lone measurement ranks nothing, so until a
		// second candidate is measured every ticket goes to the others:
		// even a hopeless first candidate then runs only once.
		rest := 1 - l.cfg.Alpha
		if measured == 1 {
			rest = 1
		}
		ks.probing = rest > 0
		sh[b] = 1 - rest
		for i, c := range ks.cands {
			if first(i, c) {
				sh[i] = rest / float64(probes)
			}
		}
		return b
	}
	best := ks.cands[b]
	if l.retry(ks, b) {
		return l.tickets(ks) // some excluded ones are now to be measured again
	}
	var n [3]int
	for i, c := range ks.cands {
		if i != b {
			n[l.class(c, best)]++
		}
	}
	var per [3]float64 // share per implementation of each class
	rest := 1 - l.cfg.Alpha
	switch {
	case n[contender] > 0 && n[doubtful] > 0:
		per[contender] = rest * (1 - doubtfulShare) / float64(n[contender])
		per[doubtful] = rest * doubtfulShare / float64(n[doubtful])
	case n[contender] > 0:
		per[contender] = rest / float64(n[contender])
	case n[doubtful] > 0:
		per[doubtful] = rest / float64(n[doubtful])
	default:
		sh[b] = 1
		return b
	}
	sh[b] = 1
	for i, c := range ks.cands {
		if i != b {
			sh[i] = per[l.class(c, best)] * l.settled(c)
			sh[b] -= sh[i]
		}
	}
	return b
}

// settled is the part of its exploration share a candidate keeps: all of
// it up to Settle samples as a rival, then Settle/samples, down to
// settleFloor (LotteryConfig.Settle). The rest goes to the best.
func (l *Lottery) settled(c *impl) float64 {
	if n := float64(c.rival); n > float64(l.cfg.Settle) {
		return max(float64(l.cfg.Settle)/n, settleFloor)
	}
	return 1
}

// retry marks stale the implementations excluded on fewer than MinSamples
// samples (as Hopeless) for Retry draws or more (doubling at each retry),
// and reports whether it marked any. Those excluded by the two-standard-
// deviation bound stand on enough samples to wait for a re-exploration.
func (l *Lottery) retry(ks *keyState, b int) bool {
	marked := false
	for i, c := range ks.cands {
		if i == b || c.Calls == 0 || c.Calls >= int64(l.cfg.MinSamples) || c.stale || l.class(c, ks.cands[b]) != excluded {
			continue
		}
		if c.retry == 0 {
			c.retry = uint64(l.cfg.Retry)
		}
		if ks.draws-c.at >= c.retry {
			c.stale, marked = true, true
			c.retry *= 2
		}
	}
	return marked
}

// Choose implements Selector.
func (l *Lottery) Choose(k Key, candidates []string) Choice {
	if len(candidates) == 0 {
		return Choice{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ks := l.key(k)
	ks.setCandidates(candidates)
	ks.draws++
	b := l.tickets(ks)
	var i int
	if !ks.drawn {
		// Cold start runs the caller's first choice; restored learning
		// runs the best known at once.
		ks.drawn = true
		i = max(b, 0)
	} else {
		i = l.draw(ks.shares)
	}
	c := ks.cands[i]
	ttl := l.cfg.MinTTL
	if !c.probe() && !ks.probing {
		ttl = l.cfg.MaxTTL
		if t := ks.shares[i] * float64(l.cfg.MaxTTL); t < float64(l.cfg.MaxTTL) {
			ttl = max(1, int(t))
		}
	}
	return Choice{Impl: c.name, TTL: max(ttl, l.cfg.MinTTL)}
}

// draw returns an index drawn with probability shares[i] (shares sum to 1).
func (l *Lottery) draw(shares []float64) int {
	u := l.rng.Float64()
	last := 0
	for i, s := range shares {
		if s <= 0 {
			continue
		}
		if u < s {
			return i
		}
		u -= s
		last = i
	}
	return last // rounding left u just above the total
}

// Record implements Selector. Negative durations are ignored.
func (l *Lottery) Record(k Key, name string, d time.Duration) {
	if d < 0 {
		return
	}
	x := d.Seconds()
	l.mu.Lock()
	defer l.mu.Unlock()
	ks := l.key(k)
	c := ks.impl(name)
	if c.stale {
		c.Stats, c.stale, c.rival = Stats{}, false, 0
	}
	b := ks.best(l.cfg.MinSamples)
	isBest := b >= 0 && ks.cands[b] == c
	if isBest {
		c.rival = 0
	} else {
		c.rival++
	}
	l.drift(ks, c, x, isBest)
	if c.Calls >= int64(l.cfg.MinSamples) {
		// A stall, not the implementation: see sampleCap.
		x = min(x, sampleCap*c.Avg)
	}
	c.add(x, l.cfg.Weight)
	c.at = ks.draws
}

// sampleCap bounds a sample of an implementation with MinSamples samples
// or more, as a multiple of its average, before it joins the average: one
// call a stalled host stretched 50× made the best's average 7× its mean,
// and the best then Hopeless, excluded for Retry draws (on a simulated
// host stalling one call in 100 at 50× for every implementation, the
// lottery's calls cost 1.29× the best's). A level shift still shows: each
// sample moves the average by up to (sampleCap-1)·Weight, and the drift
// rule looks at the samples as they came.
const sampleCap = 3

// drift counts x, a sample of c about to be added, towards a drift of the
// key's best (isBest: c is it) and re-explores the key when the run
// reaches DriftCalls.
func (l *Lottery) drift(ks *keyState, c *impl, x float64, isBest bool) {
	if c.Calls < int64(l.cfg.MinSamples) || !isBest {
		return
	}
	dir := func(ref float64) int {
		switch {
		case x > ref*(1+l.cfg.DriftRatio):
			return 1
		case x < ref*(1-l.cfg.DriftRatio):
			return -1
		}
		return 0
	}
	if ks.streak > 0 {
		ref := c.Avg
		if c.refGen == ks.gen {
			ref = c.ref
		}
		if d := dir(ref); d == ks.dir {
			if c.refGen != ks.gen {
				c.ref, c.refGen = c.Avg, ks.gen
			}
			ks.streak++
			if ks.streak >= l.cfg.DriftCalls {
				l.reexplore(ks)
			}
			return
		}
	}
	// Not continuing a run: maybe start one, measured from c's average.
	ks.gen++
	ks.streak, ks.dir = 0, dir(c.Avg)
	if ks.dir != 0 {
		c.ref, c.refGen = c.Avg, ks.gen
		ks.streak = 1
		if ks.streak >= l.cfg.DriftCalls {
			l.reexplore(ks)
		}
	}
}

// reexplore marks everything known of the key stale: conditions changed,
// so each implementation is measured afresh once.
func (l *Lottery) reexplore(ks *keyState) {
	for _, c := range ks.impls {
		if c.Calls > 0 {
			c.stale = true
		}
		c.retry = 0
	}
	ks.streak, ks.dir = 0, 0
	ks.gen++
	ks.reexplored++
}

// Best returns the candidate the lottery favours for k: the one with the
// lowest average among those with enough samples (see keyState.best), or
// false when none has been measured.
func (l *Lottery) Best(k Key, candidates []string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ks := l.keys[k]
	if ks == nil {
		return "", false
	}
	var best *impl
	trusted := false
	for _, name := range candidates {
		c := ks.impls[name]
		if c == nil || c.Calls == 0 {
			continue
		}
		enough := c.Calls >= int64(l.cfg.MinSamples) && !c.stale
		switch {
		case best == nil, enough && !trusted, enough == trusted && c.Avg < best.Avg:
			best, trusted = c, enough
		}
	}
	if best == nil {
		return "", false
	}
	return best.name, true
}

// Average returns the running average of impl's time for k, and false
// when impl has no sample there.
func (l *Lottery) Average(k Key, impl string) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ks := l.keys[k]
	if ks == nil {
		return 0, false
	}
	c := ks.impls[impl]
	if c == nil || c.Calls == 0 {
		return 0, false
	}
	return time.Duration(c.Avg * float64(time.Second)), true
}
