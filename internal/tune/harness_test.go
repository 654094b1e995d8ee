package tune

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// world is a synthetic machine: implementation i costs means[i] (in
// milliseconds) times 1+noise·N(0,1), never less than a tenth of its mean.
type world struct {
	means []float64
	noise float64
	rng   *rand.Rand
}

func (w *world) cost(i int) time.Duration {
	x := w.means[i] * max(0.1, 1+w.noise*w.rng.NormFloat64())
	return time.Duration(x * float64(time.Millisecond))
}

// fastest is the index of the lowest mean.
func (w *world) fastest() int {
	return slices.Index(w.means, slices.Min(w.means))
}

// run drives a Lottery the way a collective would: choose, run the choice
// for TTL calls recording each, choose again.
type run struct {
	t     testing.TB
	l     *Lottery
	key   Key
	names []string
	w     *world
	index map[string]int

	calls int // calls so far
	cur   int // implementation of the current choice
	ttl   int // calls left in it
	draws []int
}

var harnessKey = Key{Op: "allreduce", Ranks: 8, SizeClass: 16, Commutative: true, Transports: "shm"}

func newRun(t testing.TB, cfg LotteryConfig, w *world) *run {
	l, err := NewLottery(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{t: t, l: l, key: harnessKey, w: w, index: make(map[string]int)}
	for i := range w.means {
		name := fmt.Sprintf("impl%02d", i)
		r.names = append(r.names, name)
		r.index[name] = i
	}
	return r
}

// step makes one call and returns the implementation it ran.
func (r *run) step() int { return r.stepWith(r.w.cost) }

// stepWith is step with cost giving the call's time.
func (r *run) stepWith(cost func(int) time.Duration) int {
	if r.ttl == 0 {
		ch := r.l.Choose(r.key, r.names)
		i, ok := r.index[ch.Impl]
		if !ok || ch.TTL < 1 {
			r.t.Fatalf("Choose = %+v: not a candidate, or TTL < 1", ch)
		}
		r.cur, r.ttl = i, ch.TTL
		r.draws = append(r.draws, i)
	}
	r.l.Record(r.key, r.names[r.cur], cost(r.cur))
	r.ttl--
	r.calls++
	return r.cur
}

// window runs one draw's calls as the collectives do (internal/comm): it
// records one sample, their mean, and returns the implementation and how
// many calls it ran.
func (r *run) window(cost func(int) time.Duration) (impl, calls int) {
	ch := r.l.Choose(r.key, r.names)
	i, ok := r.index[ch.Impl]
	if !ok || ch.TTL < 1 {
		r.t.Fatalf("Choose = %+v: not a candidate, or TTL < 1", ch)
	}
	var sum time.Duration
	for range ch.TTL {
		sum += cost(i)
	}
	r.l.Record(r.key, ch.Impl, sum/time.Duration(ch.TTL))
	r.calls += ch.TTL
	r.draws = append(r.draws, i)
	return i, ch.TTL
}

// best is the index of the lottery's best (lowest average) candidate, or -1.
func (r *run) best() int {
	ks := r.l.keys[r.key]
	if ks == nil {
		return -1
	}
	b := ks.best(r.l.cfg.MinSamples)
	if b < 0 {
		return -1
	}
	return r.index[ks.cands[b].name]
}

// shuffledMeans returns means in a seeded random order, so that the fastest
// is not always the cold-start candidate.
func shuffledMeans(rng *rand.Rand, means []float64) []float64 {
	m := slices.Clone(means)
	rng.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
	return m
}
