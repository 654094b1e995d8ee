package sample

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/profile"
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
	base, span      int
	transport       string
	eagerMax        int64
	rtts            map[string]map[int64][]time.Duration // by method and size, over every round
	out, in         []byte
	out2, in2       []byte
	vec, sum        []float64 // a collective's vectors
	outAll, inAll   []byte    // the buffers' storage, allocated once
	out2All, in2All []byte
	vecAll, sumAll  []float64
}

func newSampler(ctx context.Context, c *commtune.Comm, plan Plan, progress Progress, total int) *sampler {
	ep := control.Of(c)
	me := c.Rank()
	s := &sampler{ctx: ctx, c: c, ep: ep, me: me, peer: 1 - me, plan: plan, progress: progress, total: total,
		rtts: map[string]map[int64][]time.Duration{}}
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
// first or right after the same one). A block of one method is an
// unrecorded round trip — the switch of method, and of the peer's state,
// is not part of the next one — then plan.Reps round trips.
//
// Taking the sizes in turn, round after round, rather than one size after
// another spreads each point's round trips over the whole phase: this
// machine is shared, and a burst of foreign load (a build, another job)
// then lengthens a few blocks of every size, which the median discards,
// instead of every block of a few sizes, which it keeps — a quick pass
// taken size after size moved a whole octave of sizes 3–10 times up while
// a build ran.
func (s *sampler) phase(items []item, blocks int) error {
	if len(items) > 0 {
		if err := s.warmUp(items[0]); err != nil {
			return err
		}
	}
	for b := 0; b < blocks; b++ {
		for _, it := range items {
			s.buffers(it.size)
			reps := s.plan.Reps(it.size)
			for j := range it.methods {
				m := it.methods[(b+j)%len(it.methods)]
				if err := s.use(m); err != nil {
					return err
				}
				if _, err := s.roundTrip(m); err != nil {
					return err
				}
				for i := 0; i < reps; i++ {
					d, err := s.roundTrip(m)
					if err != nil {
						return err
					}
					s.record(m.Name, it.size, d)
				}
			}
			s.step(fmt.Sprintf("%s %s", s.transport, units.FormatSize(it.size)))
		}
	}
	return nil
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

func (s *sampler) record(method string, size int64, d time.Duration) {
	bySize := s.rtts[method]
	if bySize == nil {
		bySize = map[int64][]time.Duration{}
		s.rtts[method] = bySize
	}
	bySize[size] = append(bySize[size], d)
}

// curve returns method's points so far, by size.
func (s *sampler) curve(method string) profile.Curve {
	bySize := s.rtts[method]
	sizes := make([]int64, 0, len(bySize))
	for sz := range bySize {
		sizes = append(sizes, sz)
	}
	slices.Sort(sizes)
	var c profile.Curve
	for _, sz := range sizes {
		c = append(c, point(sz, bySize[sz]))
	}
	return c
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

// point reduces one size's one-way times to a sample.
func point(size int64, d []time.Duration) profile.Sample {
	d = slices.Clone(d)
	slices.Sort(d)
	q := func(f float64) float64 {
		return float64(d[int(f*float64(len(d)-1)+0.5)].Nanoseconds())
	}
	p := profile.Sample{Size: size, Median: q(0.5), P25: q(0.25), P75: q(0.75), Reps: len(d)}
	// A timer reading of 0 ns is possible on a fast path; the profile wants
	// positive times.
	p.P25, p.Median, p.P75 = max(p.P25, 1), max(p.Median, 1), max(p.P75, 1)
	return p
}
