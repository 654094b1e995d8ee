package sample

import (
	"fmt"
	"slices"
	"time"

	"github.com/commtune/commtune/internal/stats"
)

// The machine's state. The host under this machine changes state for
// seconds at a time: then everything two ranks do takes 1.3–10 times as
// long (8-byte one-way times of 550–600 ns in consecutive jobs where
// others measured 365 ns, with the same code and paths; a 4 MiB allreduce
// point of a quick pass 3.4 times what the program measured a minute
// later). A point all of whose blocks fell in such a stretch describes
// another machine, and a slowBlock filter among them cannot see it: they
// are all alike. So every round of an item starts with a state probe — a
// few 8-byte round trips under the peer's own policy — and a point keeps
// the blocks whose probe was within stateSlack of the pass's usual one.
const (
	probeSize   = 8
	probeReps   = 8
	probeSettle = 200 * time.Microsecond // past the previous method's lingering
	// stateSlack is how much slower than the usual state a probe may be
	// and its blocks count: 8-byte round trips vary by a few percent
	// within one state.
	stateSlack = 1.25
	// usualQuantile picks the usual state among the pass's probes: the
	// faster states are the machine's own, the slower ones its host's.
	usualQuantile = 0.25
	// maxRedo bounds the rounds a phase adds for points none of whose
	// blocks ran in the usual state: when the machine stays in another one
	// for longer, the point keeps what it has.
	maxRedo = 2
)

// block is one block of round trips of one method at one size, with the
// state probe taken before it.
type block struct {
	rtts  []time.Duration
	probe time.Duration
}

// stateProbe times probeReps round trips of probeSize bytes under the policy
// the peer had before the pass, after settling them for probeSettle, and
// returns their median one-way time (on rank 0; rank 1 answers them).
func (s *sampler) stateProbe() (time.Duration, error) {
	m := Method{Name: "probe", Policy: s.saved}
	if err := s.use(m); err != nil {
		return 0, err
	}
	out := s.out
	s.out = s.probeBuf[:]
	defer func() { s.out = out }()
	if err := s.settle(m, probeSize, probeSettle); err != nil {
		return 0, err
	}
	d := make([]time.Duration, probeReps)
	for i := range d {
		var err error
		if d[i], err = s.roundTrip(m); err != nil {
			return 0, err
		}
	}
	p := time.Duration(stats.Median(d)) // whole ns, as the round trips were
	if s.me == 0 {
		s.states = append(s.states, p)
	}
	return p, nil
}

// usualState is the probe of the machine's usual state so far in the pass
// (0 before any probe).
func (s *sampler) usualState() time.Duration {
	if len(s.states) == 0 {
		return 0
	}
	return time.Duration(stats.Quantile(s.states, usualQuantile))
}

// inState returns the round trips of the blocks that ran within stateSlack
// of the usual state, or of every block if none did (or there is no
// usual state yet).
func inState(blocks []block, usual time.Duration) [][]time.Duration {
	var in, all [][]time.Duration
	for _, b := range blocks {
		all = append(all, b.rtts)
		if usual > 0 && float64(b.probe) <= stateSlack*float64(usual) {
			in = append(in, b.rtts)
		}
	}
	if len(in) == 0 {
		return all
	}
	return in
}

// outOfState lists, on rank 0, the items of which some method has no
// block in the usual state.
func (s *sampler) outOfState(items []item) []int {
	usual := s.usualState()
	if s.me != 0 || usual == 0 {
		return nil
	}
	var out []int
	for i, it := range items {
		for _, m := range it.methods {
			blocks := s.rtts[m.Name][it.size]
			if !slices.ContainsFunc(blocks, func(b block) bool { return float64(b.probe) <= stateSlack*float64(usual) }) {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// agreeItems sends rank 0's list of item indices to rank 1 and returns it
// on both.
func (s *sampler) agreeItems(idx []int) ([]int, error) {
	n, err := s.exchange(int64(len(idx)))
	if err != nil {
		return nil, err
	}
	if n < 0 || n > 1<<20 {
		return nil, fmt.Errorf("sample: rank 0 announced %d items", n)
	}
	out := make([]int, n)
	for i := range out {
		var v int64
		if s.me == 0 {
			v = int64(idx[i])
		}
		if v, err = s.exchange(v); err != nil {
			return nil, err
		}
		out[i] = int(v)
	}
	return out, nil
}
