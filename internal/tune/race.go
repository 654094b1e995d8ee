package tune

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Defaults of RaceConfig.
const (
	// DefaultTurn is RaceConfig.Turn's default: one untimed call, then two
	// timed ones.
	DefaultTurn = 3
	// raceMaxTurns bounds the turns of each candidate in one round, so
	// that a race over many candidates does not double its rounds to
	// hundreds of calls.
	raceMaxTurns = 4
	// raceFinalTurns is the turns of each of the final pair: their
	// figures decide.
	raceFinalTurns = 8
)

// RaceConfig sets a Race. The zero value is valid: each zero field takes
// its default.
type RaceConfig struct {
	// Turn is how many calls of one candidate run in a row (default 3, at
	// least 2). The first call of a turn is not timed: it pays for what
	// the candidate before left behind (ranks out of step, messages still
	// in flight, caches) and, the first time, for the candidate's set-up.
	Turn int
	// DropRatio sends a candidate out at once, whatever the halving keeps,
	// when its figure reaches DropRatio times the leader's (default 2;
	// must exceed 1).
	DropRatio float64
}

// Validate reports every field outside its range, or nil.
func (c RaceConfig) Validate() error {
	var errs []string
	if c.Turn != 0 && c.Turn < 2 {
		errs = append(errs, fmt.Sprintf("Turn %d: want 0 (default) or at least 2", c.Turn))
	}
	if math.IsNaN(c.DropRatio) || c.DropRatio != 0 && c.DropRatio <= 1 {
		errs = append(errs, fmt.Sprintf("DropRatio %v does not exceed 1", c.DropRatio))
	}
	if len(errs) > 0 {
		return fmt.Errorf("tune: race: %s", strings.Join(errs, "; "))
	}
	return nil
}

func (c RaceConfig) withDefaults() RaceConfig {
	if c.Turn == 0 {
		c.Turn = DefaultTurn
	}
	if c.DropRatio == 0 {
		c.DropRatio = DefaultDropRatio
	}
	return c
}

// RaceFigure is a race's estimate of a candidate's time on one rank from
// its timed calls: the mean of all but the slowest quarter (at least one
// of two or more). A noisy host's stalls sit in the upper tail; with a
// few calls ADCL's filter, which keeps every sample when more than a
// fifth are outliers, cannot remove them, and the maximum over the ranks
// would then compare stalls. NaN with no calls.
func RaceFigure(times []float64) float64 {
	n := len(times)
	if n == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(times))
	keep := n - max(n/3, min(n-1, 1))
	var sum float64
	for _, x := range s[:keep] {
		sum += x
	}
	return sum / float64(keep)
}

// Race selects among a few candidates by successive halving over
// interleaved turns: in each round every candidate still in runs its
// turns (Turn calls in a row, the first untimed), round robin; one
// reduction of each candidate's RaceFigure over all its timed calls, the
// maximum over the ranks, then keeps the better half (and sends out
// at once anything DropRatio times the leader's), and the next round
// gives each survivor twice the turns (up to 4; the final pair, whose
// figures decide, runs 8). The last one in wins.
//
// Where ADCL's brute force (BruteForce) spends as many calls on the
// hopeless as on the best and times each call right after another
// implementation's, a race spends most of its calls on the leaders, and
// times a candidate running after itself: an implementation that leaves
// its ranks out of step is charged for it, not its successor. Six
// candidates cost 84 calls and three reductions; twenty, 264 and five.
//
// A Race is pure and deterministic: every rank that builds it from the
// same names and config, and passes the same reduced vectors, runs the
// same calls. It is not safe for concurrent use.
type Race struct {
	cfg     RaceConfig
	names   []string    // candidates still in, in the order given
	samples [][]float64 // timed calls of each candidate still in, every round
	turns   int         // turns of each candidate in the current round
	k       int         // calls recorded in the current round
	calls   int         // calls recorded in every round
	rounds  int
	winner  string
	log     []string
}

// NewRace returns a Race over names, whose order is the order of each
// round's turns. It refuses what NewBruteForce refuses, and an invalid cfg.
func NewRace(names []string, cfg RaceConfig) (*Race, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkNames(names); err != nil {
		return nil, err
	}
	r := &Race{cfg: cfg.withDefaults(), names: slices.Clone(names), samples: make([][]float64, len(names)), turns: 1}
	if len(names) == 1 {
		r.winner = names[0]
	}
	return r, nil
}

// roundCalls is how many calls the current round runs. The final pair
// runs the most turns whatever the round: its result is the decision.
func (r *Race) roundCalls() int {
	turns := r.turns
	if len(r.names) <= 2 {
		turns = raceFinalTurns
	}
	return len(r.names) * turns * r.cfg.Turn
}

// Next returns the candidate of the next call. When the round is over it
// returns ("", true) until Reduced; once a winner is chosen, the winner
// and false, forever.
func (r *Race) Next() (name string, due bool) {
	if r.winner != "" {
		return r.winner, false
	}
	if r.k >= r.roundCalls() {
		return "", true
	}
	return r.names[(r.k/r.cfg.Turn)%len(r.names)], false
}

// Record reports that the call Next asked for, name, took seconds on this
// rank. It refuses (ErrUnexpectedRecord) a name other than Next's, a time
// that is not a finite non-negative number, and a call while a reduction
// is due, and then counts nothing. After the decision it ignores every
// call.
func (r *Race) Record(name string, seconds float64) error {
	if r.winner != "" {
		return nil
	}
	want, due := r.Next()
	switch {
	case due:
		return fmt.Errorf("%w: %s: the round is over, a reduction is due", ErrUnexpectedRecord, name)
	case name != want:
		return fmt.Errorf("%w: %s, want %s", ErrUnexpectedRecord, name, want)
	case !validTime(seconds):
		return fmt.Errorf("%w: %s took %v s", ErrUnexpectedRecord, name, seconds)
	}
	if r.k%r.cfg.Turn != 0 {
		i := (r.k / r.cfg.Turn) % len(r.names)
		r.samples[i] = append(r.samples[i], seconds)
	}
	r.k++
	r.calls++
	return nil
}

// Names returns the candidates still in, in the order of Local's vector.
func (r *Race) Names() []string { return slices.Clone(r.names) }

// Local returns this rank's RaceFigure of each candidate, in the order of
// Names: the vector every rank reduces with MAX.
func (r *Race) Local() []float64 {
	out := make([]float64, len(r.names))
	for i, s := range r.samples {
		out[i] = RaceFigure(s)
	}
	return out
}

// Reduced ends a round with globalMax, the element-wise maximum of every
// rank's Local, and returns the winner once one candidate is left ("" before).
// It refuses (ErrNotReady) a vector before the round is over or after
// the decision, and (ErrBadReduction) one of the wrong length or with a
// value that is not a finite non-negative time; either changes nothing.
func (r *Race) Reduced(globalMax []float64) (winner string, err error) {
	if r.winner != "" {
		return "", fmt.Errorf("%w: already decided for %s", ErrNotReady, r.winner)
	}
	if r.k < r.roundCalls() {
		return "", fmt.Errorf("%w: %d of %d calls of the round measured", ErrNotReady, r.k, r.roundCalls())
	}
	if err := checkReduced(globalMax, len(r.names)); err != nil {
		return "", err
	}
	r.rounds++
	best := slices.Min(globalMax)
	order := make([]int, len(r.names))
	for i := range order {
		order[i] = i
	}
	// Stable: of equal figures the earlier candidate ranks first.
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case globalMax[a] < globalMax[b]:
			return -1
		case globalMax[a] > globalMax[b]:
			return 1
		}
		return 0
	})
	keep := (len(r.names) + 1) / 2
	in := make([]bool, len(r.names))
	for rank, i := range order {
		in[i] = rank < keep && (rank == 0 || globalMax[i] < r.cfg.DropRatio*best)
	}
	var parts []string
	names, samples := r.names[:0:0], r.samples[:0:0]
	for i, n := range r.names {
		mark := ""
		if !in[i] {
			mark = " out"
		}
		parts = append(parts, fmt.Sprintf("%s %s%s", n, secs(globalMax[i]), mark))
		if in[i] {
			names, samples = append(names, n), append(samples, r.samples[i])
		}
	}
	r.logf("round %d (%d calls): %s", r.rounds, r.k, strings.Join(parts, ", "))
	r.names, r.samples, r.k = names, samples, 0
	r.turns = min(2*r.turns, raceMaxTurns)
	if len(names) == 1 {
		r.winner = names[0]
		r.logf("%s wins after %d calls", r.winner, r.calls)
	}
	return r.winner, nil
}

// Calls returns the calls recorded.
func (r *Race) Calls() int { return r.calls }

// Explain returns one line per round: each candidate's reduced figure and
// who went out, then the winner.
func (r *Race) Explain() []string { return slices.Clone(r.log) }

func (r *Race) logf(format string, args ...any) { r.log = append(r.log, fmt.Sprintf(format, args...)) }
