package sample

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/stats"
	"github.com/commtune/commtune/internal/units"
)

// sampler is one rank's side of a pass.
type sampler struct {
	ctx      context.Context
	c        *commtune.Comm
	ep       control.Endpoint
	me, peer int
	saved    core.Policy // the peer's policy before the pass
	plan     Plan
	progress Progress
	done     int
	total    int
	// clock, while set, reports progress instead of counting blocks: the
	// share of a refinement's time spent, on steps from base to base+span.
	clock           func() float64
	rounds          uint64 // blocks timed so far: the seed of the next order
	base, span      int
	transport       string
	eagerMax        int64
	rtts            map[string]map[int64][]block // by method and size
	states          []time.Duration              // every state probe of the pass (rank 0)
	out, in         []byte
	out2, in2       []byte
	vec, sum        []float64 // a collective's vectors
	outAll, inAll   []byte    // the buffers' storage, allocated once
	out2All, in2All []byte
	vecAll, sumAll  []float64
	probeBuf        [probeSize]byte // the state probe's message
}

func newSampler(ctx context.Context, c *commtune.Comm, ep control.Endpoint, plan Plan, progress Progress, total int) *sampler {
	me := c.Rank()
	s := &sampler{ctx: ctx, c: c, ep: ep, me: me, peer: 1 - me, plan: plan, progress: progress, total: total,
		rtts: map[string]map[int64][]block{}}
	s.transport = ep.Transport(s.peer)
	s.saved = ep.Policy(s.peer)
	return s
}

// item is one size and the methods timed at it.
type item struct {
	size    int64
	methods []Method
}

// phase times every item's methods at its size, in rounds: each round
// times one block of every item, each block one method after another
// (starting with the next method each round, so that none always runs
// first or right after the same one). A block of one method settles first
// (settle), then times plan.Reps round trips.
//
// Taking the sizes in turn, round after round, rather than one size after
// another spreads each point's round trips over the whole phase: this
// machine is shared, and a burst of foreign load (a build, another job)
// then lengthens a few blocks of every size, which the median discards,
// instead of every block of a few sizes, which it keeps — a quick pass
// taken size after size moved a whole octave of sizes 3–10 times up while
// a build ran.
//
// Each item's blocks of a round are timed with a state probe (probe): a
// point keeps the blocks that ran in the machine's usual state, and the
// items none of whose blocks of some method did are timed again, in up to
// maxRedo more rounds of their own, before the phase ends.
func (s *sampler) phase(items []item, blocks int) error {
	if len(items) > 0 {
		if err := s.warmUp(items[0]); err != nil {
			return err
		}
	}
	for b := 0; b < blocks; b++ {
		for _, it := range shuffled(items, s.rounds) {
			if err := s.blocks(it, b); err != nil {
				return err
			}
			s.step(fmt.Sprintf("%s %s", s.transport, units.FormatSize(it.size)))
		}
	}
	for r := 0; r < maxRedo; r++ {
		redo, err := s.agreeItems(s.outOfState(items))
		if err != nil || len(redo) == 0 {
			return err
		}
		for _, i := range redo {
			if err := s.blocks(items[i], blocks+r); err != nil {
				return err
			}
		}
	}
	return nil
}

// blocks times one block of each of it's methods at its size, the b-th
// round of the item, after a state probe.
func (s *sampler) blocks(it item, b int) error {
	s.rounds++
	probe, err := s.stateProbe()
	if err != nil {
		return err
	}
	s.buffers(it.size)
	reps := s.plan.Reps(it.size)
	if it.methods[0].Op != "" {
		reps = max(s.plan.Reps(it.size/2), collMinRep) // by what a rank sends each round
	}
	for j := range it.methods {
		m := it.methods[(b+j)%len(it.methods)]
		if err := s.use(m); err != nil {
			return err
		}
		if err := s.settle(m, it.size, settleTime); err != nil {
			return err
		}
		rtts := make([]time.Duration, reps)
		for i := range rtts {
			d, err := s.roundTrip(m)
			if err != nil {
				return err
			}
			rtts[i] = d
		}
		s.record(m.Name, it.size, block{rtts, probe})
	}
	return nil
}

// shuffled returns items in an order drawn from seed, the same on both
// ranks. Each round takes the sizes in a new order, so that what precedes
// a block — the previous size's messages, where they left the rings and
// the caches — changes from one block of a point to the next: in a fixed
// order a point met the same state every round, and one 1 MiB point of a
// pass came out five times its neighbours in all its blocks.
func shuffled(items []item, seed uint64) []item {
	out := slices.Clone(items)
	r := rand.New(rand.NewPCG(seed, 0x636f6d6d74756e65))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// step reports one finished block to the progress callback.
func (s *sampler) step(what string) {
	s.done++
	if s.progress == nil || s.me != 0 {
		return
	}
	done := s.done
	if s.clock != nil {
		done = s.base + min(int(s.clock()*float64(s.span)), s.span-1)
	}
	s.progress(done, s.total, what)
}

// record keeps one block of method's round trips at size.
func (s *sampler) record(method string, size int64, b block) {
	bySize := s.rtts[method]
	if bySize == nil {
		bySize = map[int64][]block{}
		s.rtts[method] = bySize
	}
	bySize[size] = append(bySize[size], b)
}

// curve returns method's points so far, by size, for a profile: without
// the points a slow stretch displaced (dropBumps).
func (s *sampler) curve(method string) profile.Curve { return dropBumps(s.points(method)) }

// points returns method's points so far, by size: every size measured.
func (s *sampler) points(method string) profile.Curve {
	bySize := s.rtts[method]
	sizes := make([]int64, 0, len(bySize))
	for sz := range bySize {
		sizes = append(sizes, sz)
	}
	slices.Sort(sizes)
	var c profile.Curve
	usual := s.usualState()
	for _, sz := range sizes {
		c = append(c, point(sz, inState(bySize[sz], usual)))
	}
	return c
}

// dropBumps leaves out of c each inner point more than bumpFactor times
// slower than both its neighbours. A transfer's time does not rise and
// fall again like that between two sizes; a slow stretch of the machine
// does, when it covers every block of a point — as it can a point that
// refinement sampled in one short round (copy at 181 KiB measured 79 µs
// between 8 µs at 128 KiB and 12 µs at 256 KiB, and moved a threshold).
// Refinement samples a point it lacks again.
func dropBumps(c profile.Curve) profile.Curve {
	out := make(profile.Curve, 0, len(c))
	for i, p := range c {
		if i > 0 && i < len(c)-1 && p.Median > bumpFactor*max(c[i-1].Median, c[i+1].Median) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// warmUp runs every method of it unrecorded. The first sizes of a phase
// otherwise pay for what came before — a fresh process, or the previous
// phase's 16 MiB messages — and measured 2–3 times slower than their
// neighbours, enough to read as crossings.
func (s *sampler) warmUp(it item) error {
	s.buffers(it.size)
	for _, m := range it.methods {
		if err := s.use(m); err != nil {
			return err
		}
		for i := 0; i < s.plan.MaxRep; i++ {
			if _, err := s.roundTrip(m); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *sampler) use(m Method) error {
	if err := s.ep.SetPolicy(s.peer, m.Policy); err != nil {
		return fmt.Errorf("sample: %s: %w", m.Name, err)
	}
	s.ep.SetStrategy(m.Strategy)
	return nil
}

// buffers sizes the message buffers for size. They are allocated once, at
// the largest size, and touched: a fresh page faulting on first use would
// be timed as part of the method (4 MiB of them cost a few hundred µs),
// where a program sends from and receives into memory it has used before.
func (s *sampler) buffers(size int64) {
	if s.outAll == nil {
		alloc := func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(i)
			}
			return b
		}
		s.outAll, s.inAll = alloc(MaxSize), alloc(MaxSize)
		s.out2All, s.in2All = alloc(maxPair), alloc(maxPair)
	}
	s.out, s.in = s.outAll[:size], s.inAll[:size]
	s.vec, s.sum = nil, nil
	if size%8 == 0 {
		if s.vecAll == nil {
			s.vecAll, s.sumAll = make([]float64, MaxSize/8), make([]float64, MaxSize/8)
			for i := range s.vecAll {
				s.vecAll[i], s.sumAll[i] = float64(i), 1
			}
		}
		s.vec, s.sum = s.vecAll[:size/8], s.sumAll[:size/8]
	}
	if size <= maxPair {
		s.out2, s.in2 = s.out2All[:size], s.in2All[:size]
	}
}

// roundTrip sends one message (or a pair) to the peer and receives the
// same back; rank 0 times it. The result is half the round trip: the
// one-way time of the profile. A collective is timed whole.
func (s *sampler) roundTrip(m Method) (time.Duration, error) {
	if m.Op != "" {
		return s.collective()
	}
	t0 := time.Now()
	var err error
	switch {
	case !m.Pair && s.me == 0:
		if err = s.c.Send(s.ctx, s.out, s.peer, tagPing); err == nil {
			_, err = s.c.Recv(s.ctx, s.out, s.peer, tagPing)
		}
	case !m.Pair:
		if _, err = s.c.Recv(s.ctx, s.out, s.peer, tagPing); err == nil {
			err = s.c.Send(s.ctx, s.out, s.peer, tagPing)
		}
	case s.me == 0:
		var r []*commtune.Request
		if r, err = s.postPair(); err == nil {
			if r, err = s.sendPair(r); err == nil {
				_, err = commtune.WaitAll(s.ctx, r...)
			}
		}
	default:
		var r []*commtune.Request
		if r, err = s.postPair(); err == nil {
			if _, err = commtune.WaitAll(s.ctx, r...); err == nil {
				if r, err = s.sendPair(nil); err == nil {
					_, err = commtune.WaitAll(s.ctx, r...)
				}
			}
		}
	}
	return time.Since(t0) / 2, err
}

// collective times one allreduce of s.vec into s.sum as a program calls
// it: the vector just written, after a barrier.
func (s *sampler) collective() (time.Duration, error) {
	for i := range s.vec {
		s.vec[i] = float64(i)
	}
	if err := s.c.Barrier(s.ctx); err != nil {
		return 0, err
	}
	t0 := time.Now()
	err := commtune.Allreduce(s.ctx, s.c, s.vec, s.sum, commtune.Sum, ringAllreduce)
	return time.Since(t0), err
}

// settleTime is how long a block runs its method unrecorded before timing
// it. A program sends its messages of one size one way, over and over; a
// pass switches method every block, and the switch lingers: after a block
// of a large-message method (a pull, a vmsplice, a cache-bypassing copy)
// the next method's round trips ran 20–100% slower for several hundred
// microseconds — its rail writers, consumer and the runtime's spare threads
// still awake, a third and fourth runnable thread on two processors —
// which one unrecorded round trip did not cover: 32 KiB by iovec measured
// 4.3–7.1 µs interleaved with the others against 2.2–2.4 µs alone, as a
// program sees it. After 1 ms it measured 2.2–3.0 µs.
const settleTime = time.Millisecond

// settle runs round trips of m, unrecorded, for at least d as rank 0
// counts it; rank 0 sends the last with another tag, so rank 1
// knows where it ends. They are ping-pongs under m's policy and strategy
// of the size m moves per message (a pair's each), or the collective
// itself (settleCollective).
func (s *sampler) settle(m Method, size int64, d time.Duration) error {
	if m.Op != "" {
		return s.settleCollective()
	}
	buf := s.out[:size]
	if s.me == 0 {
		t0 := time.Now()
		for {
			tag := tagPing
			if time.Since(t0) >= d {
				tag = tagSettled
			}
			if err := s.c.Send(s.ctx, buf, s.peer, tag); err != nil {
				return err
			}
			if _, err := s.c.Recv(s.ctx, buf, s.peer, tag); err != nil {
				return err
			}
			if tag == tagSettled {
				return nil
			}
		}
	}
	for {
		st, err := s.c.Recv(s.ctx, buf, s.peer, commtune.AnyTag)
		if err != nil {
			return err
		}
		if err := s.c.Send(s.ctx, buf, s.peer, st.Tag); err != nil {
			return err
		}
		if st.Tag == tagSettled {
			return nil
		}
	}
}

// settleCollective runs allreduces of s.vec for at least settleTime as
// rank 0 counts it. Rank 0 says whether to go on in the first element of
// its vector (rank 1 adds 0 there): both read the decision in the sum, so
// both stop after the same call.
func (s *sampler) settleCollective() error {
	t0 := time.Now()
	for {
		s.vec[0] = 0
		if s.me == 0 && time.Since(t0) < settleTime {
			s.vec[0] = 1
		}
		if err := commtune.Allreduce(s.ctx, s.c, s.vec, s.sum, commtune.Sum, ringAllreduce); err != nil {
			return err
		}
		if s.sum[0] == 0 {
			return nil
		}
	}
}

// ringAllreduce is the algorithm of profile.Collective.
var ringAllreduce = commtune.WithAlgorithm(profile.Collective)

func (s *sampler) postPair() ([]*commtune.Request, error) {
	a, err := s.c.Irecv(s.in, s.peer, tagA)
	if err != nil {
		return nil, err
	}
	b, err := s.c.Irecv(s.in2, s.peer, tagB)
	if err != nil {
		return nil, err
	}
	return []*commtune.Request{a, b}, nil
}

// sendPair submits two messages under one cork, so the strategy sees them
// together: the default one sends two packets, the aggregating one one.
func (s *sampler) sendPair(reqs []*commtune.Request) ([]*commtune.Request, error) {
	s.ep.Cork(s.peer)
	a, errA := s.c.Isend(s.out, s.peer, tagA)
	b, errB := s.c.Isend(s.out2, s.peer, tagB)
	s.ep.Uncork(s.peer)
	if err := errors.Join(errA, errB); err != nil {
		return nil, err
	}
	return append(reqs, a, b), nil
}

// exchange sends rank 0's value to rank 1 and returns it on both.
func (s *sampler) exchange(v int64) (int64, error) {
	var b [8]byte
	if s.me == 0 {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		return v, s.c.Send(s.ctx, b[:], s.peer, tagCtl)
	}
	if _, err := s.c.Recv(s.ctx, b[:], s.peer, tagCtl); err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(b[:])), nil
}

// slowBlock is how much slower than a point's fastest block a block may
// be and still count: more, and something else had the processors.
//
// This machine is shared, and so is the host under it: for stretches of a
// few hundred milliseconds everything two ranks do takes 2–10 times as
// long, with no other process running here (a quick pass measured 32 KiB
// by iovec at 2.3 µs in one quarter of its blocks and 13 µs in the rest,
// and 8 MiB by copy at 3.2 ms for 0.4 ms), and milder slowdowns of a third
// come and go too. Every method is slowed alike, so a comparison in one
// block stays fair, but a point whose median falls in such a stretch
// predicts what a program sees in the next one, not what it sees — and
// one such point made a crossing of its own (eager-iovec at 4 KiB, 36%
// above what a program measured, moved the iovec threshold there). Blocks
// of one point vary by 5–20% otherwise: leaving out one of those now and
// then costs a point a few round trips, not its value.
const slowBlock = 1.25

// bumpFactor is how much slower than both its neighbours a point may be
// and stay in its curve (dropBumps): a curve's own noise stays within it.
const bumpFactor = 1.5

// point reduces one size's blocks of one-way times to a sample: the median
// and quartiles of the round trips of every block whose median is within
// slowBlock of the fastest block's.
func point(size int64, blocks [][]time.Duration) profile.Sample {
	meds := make([]float64, len(blocks))
	for i, b := range blocks {
		meds[i] = stats.Median(b)
	}
	fastest := slices.Min(meds)
	var d []time.Duration
	for i, b := range blocks {
		if meds[i] <= slowBlock*fastest {
			d = append(d, b...)
		}
	}
	q := stats.Quantiles(d, 0.25, 0.5, 0.75) // in ns
	p := profile.Sample{Size: size, Median: q[1], P25: q[0], P75: q[2], Reps: len(d)}
	// A timer reading of 0 ns is possible on a fast path; the profile wants
	// positive times.
	p.P25, p.Median, p.P75 = max(p.P25, 1), max(p.Median, 1), max(p.P75, 1)
	return p
}
