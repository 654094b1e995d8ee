package sample

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sched"
	"github.com/commtune/commtune/internal/units"
)

// Tags of the sampling traffic.
const (
	tagPing = 1
	tagA    = 2
	tagB    = 3
	tagCtl  = 4
)

// Method is one way of moving messages that a pass times: how the sender
// treats them (Policy) and how the scheduler packs them (Strategy).
type Method struct {
	Name     string
	Policy   core.Policy
	Strategy sched.Strategy // nil: the default
	Pair     bool           // two messages per direction instead of one
	MaxSize  int64          // largest size it applies to
}

// Progress is told of each finished step (rank 0 only).
type Progress func(done, total int, what string)

// Run is the sampling pass both ranks of a two-rank job call. It times
// every method of the transport that connects them and returns, on rank
// 0, that transport's name and curves (nil on rank 1).
func Run(ctx context.Context, c *commtune.Comm, plan Plan, progress Progress) (string, *profile.Transport, error) {
	if c.Size() != 2 {
		return "", nil, fmt.Errorf("sample: a pass needs exactly 2 ranks, not %d", c.Size())
	}
	ep := control.Of(c)
	me := c.Rank()
	peer := 1 - me
	transport := ep.Transport(peer)
	rails := ep.Rails(peer)
	if len(rails) == 0 {
		return "", nil, fmt.Errorf("sample: no rail reaches rank %d", peer)
	}
	saved := ep.Policy(peer)
	defer func() {
		ep.SetPolicy(peer, saved)
		ep.SetStrategy(nil)
	}()

	eagerMax := int64(maxEager)
	for _, r := range rails { // an eager message may take any of them
		if mp := int64(r.MaxPacket); mp > 0 {
			eagerMax = min(eagerMax, mp-64) // room for the entry header
		}
	}
	eagerMax = largestPlanned(plan.Sizes, eagerMax)

	large, err := agreeLarge(ctx, c, ep, peer, transport)
	if err != nil {
		return "", nil, err
	}
	methods := []Method{
		{Name: profile.EagerCopy, Policy: core.Policy{Rendezvous: int(eagerMax), Iovec: int(eagerMax) + 1}, MaxSize: eagerMax},
		{Name: profile.EagerIovec, Policy: core.Policy{Rendezvous: int(eagerMax), Iovec: 0}, MaxSize: eagerMax},
	}
	methods = append(methods, large...)

	s := &sampler{ctx: ctx, c: c, ep: ep, me: me, peer: peer, plan: plan, progress: progress,
		total: plan.Units(), curves: map[string]profile.Curve{}, transport: transport}
	if err := s.phase(methods, plan.Sizes); err != nil {
		return "", nil, err
	}

	// Aggregation is compared with each message sent the better eager way
	// (seed 000 §III-B): rank 0 finds the iovec threshold and tells rank 1.
	var iovec int64
	if me == 0 {
		d := profile.Switch("iovec", s.curves[profile.EagerCopy], s.curves[profile.EagerIovec], profile.EagerCopy, profile.EagerIovec, 1, eagerMax)
		iovec = d.Size
	}
	if iovec, err = s.exchange(iovec); err != nil {
		return "", nil, err
	}
	eager := core.Policy{Rendezvous: int(eagerMax), Iovec: int(iovec)}
	pairs := []Method{
		{Name: profile.TwoPackets, Policy: eager, Strategy: sched.Default{}, Pair: true, MaxSize: maxPair},
		{Name: profile.Aggregated, Policy: eager, Strategy: sched.Aggregate{Max: 1 << 30}, Pair: true, MaxSize: maxPair},
	}
	var pairSizes []int64
	for _, sz := range plan.Sizes {
		if sz <= maxPair {
			pairSizes = append(pairSizes, sz)
		}
	}
	if err := s.phase(pairs, pairSizes); err != nil {
		return "", nil, err
	}
	railCurves, err := s.railPhase(rails)
	if err != nil {
		return "", nil, err
	}
	if me != 0 {
		return transport, nil, nil
	}
	return transport, &profile.Transport{MaxEager: eagerMax, Methods: s.curves, Rails: railCurves}, nil
}

// Rails phase: sizes from minRailSize, in at most
// railBlocks blocks — enough for the chunk sizes a split makes, at a cost
// that grows with the slowest rail.
const (
	minRailSize = 8 << 10
	railBlocks  = 5
)

// railPhase times the rendezvous over each rail alone (sched.Single)
// where more than one rail reaches the peer, and returns on rank 0 each
// rail's curve keyed by its identity (driver.Caps.Name): what a multirail
// split predicts chunk times from (seed 000 §III-C, seed 002 §III-C).
// Rails of one identity (two on one interface) share a curve.
func (s *sampler) railPhase(rails []driver.Caps) (map[string]profile.Curve, error) {
	if len(rails) < 2 {
		return nil, nil
	}
	var methods []Method
	for i := range rails {
		methods = append(methods, Method{Name: railMethod(i), Policy: core.Policy{Rendezvous: 0},
			Strategy: sched.Single{Rail: i}, MaxSize: MaxSize})
	}
	var sizes []int64
	for _, sz := range s.plan.Sizes { // with the full plan's midpoints
		if sz >= minRailSize {
			sizes = append(sizes, sz)
		}
	}
	saved := s.plan
	s.plan.Blocks = min(s.plan.Blocks, railBlocks)
	s.total += len(sizes) * s.plan.Blocks
	defer func() { s.plan = saved }()
	if err := s.phase(methods, sizes); err != nil {
		return nil, err
	}
	if s.me != 0 {
		return nil, nil
	}
	out := map[string]profile.Curve{}
	for i, r := range rails {
		name := r.Name
		if name == "" {
			name = fmt.Sprintf("rail%d", i)
		}
		if _, dup := out[name]; !dup {
			out[name] = s.curves[railMethod(i)]
		}
		delete(s.curves, railMethod(i))
	}
	return out, nil
}

// railMethod names the pass's method that uses rail i alone.
func railMethod(i int) string { return fmt.Sprintf("rail%d", i) }

// Measure times each method at each size between the two ranks of c,
// which both call it with the same arguments. The methods take turns
// block by block (plan.Blocks blocks of plan.Reps round trips), so drift
// hits all alike; rank 0 returns each method's curve (rank 1 nil). The
// peer's policy and the strategy are restored afterwards.
func Measure(ctx context.Context, c *commtune.Comm, methods []Method, sizes []int64, plan Plan, progress Progress) (map[string]profile.Curve, error) {
	if c.Size() != 2 {
		return nil, fmt.Errorf("sample: measuring needs exactly 2 ranks, not %d", c.Size())
	}
	ep := control.Of(c)
	me := c.Rank()
	peer := 1 - me
	saved := ep.Policy(peer)
	defer func() {
		ep.SetPolicy(peer, saved)
		ep.SetStrategy(nil)
	}()
	s := &sampler{ctx: ctx, c: c, ep: ep, me: me, peer: peer, plan: plan, progress: progress,
		total: len(sizes) * plan.Blocks, curves: map[string]profile.Curve{}, transport: ep.Transport(peer)}
	if err := s.phase(methods, sizes); err != nil {
		return nil, err
	}
	if me != 0 {
		return nil, nil
	}
	return s.curves, nil
}

// largestPlanned returns the largest planned size ≤ limit.
func largestPlanned(sizes []int64, limit int64) int64 {
	best := int64(1)
	for _, s := range sizes {
		if s <= limit {
			best = s
		}
	}
	return best
}

// agreeLarge lists the rendezvous methods both ranks can use: on shared
// memory each large-message method the rails offer (and the receiver pull
// where single copy works), on other transports the one push.
func agreeLarge(ctx context.Context, c *commtune.Comm, ep control.Endpoint, peer int, transport string) ([]Method, error) {
	rndv := func(name string, large ...core.LargeMethod) Method {
		return Method{Name: name, Policy: core.Policy{Rendezvous: 0, Large: large}, MaxSize: MaxSize}
	}
	if transport != "shm" {
		return []Method{rndv(profile.Rendezvous)}, nil
	}
	saved := ep.Policy(peer)
	var mine []string
	for _, m := range profile.LargeMethods {
		name := m
		if m == "cma" {
			name = core.MethodPull
		}
		if ep.SetPolicy(peer, core.Policy{Large: []core.LargeMethod{{Method: name}}}) == nil {
			mine = append(mine, m)
		}
	}
	if err := ep.SetPolicy(peer, saved); err != nil {
		return nil, err
	}
	theirs := make([]byte, 256)
	st, err := c.Sendrecv(ctx, []byte(strings.Join(mine, ",")), peer, tagCtl, theirs, peer, tagCtl)
	if err != nil {
		return nil, fmt.Errorf("sample: agreeing on methods: %w", err)
	}
	both := strings.Split(string(theirs[:st.Count]), ",")
	var out []Method
	for _, m := range mine {
		if !slices.Contains(both, m) {
			continue
		}
		name := m
		if m == "cma" {
			name = core.MethodPull
		}
		out = append(out, rndv(profile.RendezvousVia(m), core.LargeMethod{Method: name}))
	}
	if len(out) == 0 {
		return nil, errors.New("sample: no large-message method works both ways")
	}
	return out, nil
}

type sampler struct {
	ctx       context.Context
	c         *commtune.Comm
	ep        control.Endpoint
	me, peer  int
	plan      Plan
	progress  Progress
	done      int
	total     int
	transport string
	curves    map[string]profile.Curve
	out, in   []byte
	out2, in2 []byte
	// the buffers' storage, allocated once
	outAll, inAll, out2All, in2All []byte
	rtts                           map[string][]time.Duration
}

// phase times methods at each size, taking turns block by block.
func (s *sampler) phase(methods []Method, sizes []int64) error {
	if len(sizes) > 0 {
		if err := s.warmUp(methods, sizes[0]); err != nil {
			return err
		}
	}
	for _, size := range sizes {
		var ms []Method
		for _, m := range methods {
			if size <= m.MaxSize {
				ms = append(ms, m)
			}
		}
		s.buffers(size)
		s.rtts = map[string][]time.Duration{}
		reps := s.plan.Reps(size)
		for b := 0; b < s.plan.Blocks; b++ {
			// Each block starts with the next method, so that none always
			// runs first or right after the same one.
			for j := range ms {
				m := ms[(b+j)%len(ms)]
				if err := s.use(m); err != nil {
					return err
				}
				// One unrecorded round trip: the switch of method, and of
				// the peer's state, is not part of the next one.
				if _, err := s.roundTrip(m); err != nil {
					return err
				}
				for i := 0; i < reps; i++ {
					d, err := s.roundTrip(m)
					if err != nil {
						return err
					}
					s.rtts[m.Name] = append(s.rtts[m.Name], d)
				}
			}
			s.done++
			if s.progress != nil && s.me == 0 {
				s.progress(s.done, s.total, fmt.Sprintf("%s %s", s.transport, units.FormatSize(size)))
			}
		}
		if s.me == 0 {
			for _, m := range ms {
				s.curves[m.Name] = append(s.curves[m.Name], point(size, s.rtts[m.Name]))
			}
		}
	}
	return nil
}

// warmUp runs every method at size unrecorded. The first sizes of a
// phase otherwise pay for what came before — a fresh process, or the
// previous phase's 16 MiB messages — and measured 2–3 times slower than
// their neighbours, enough to read as crossings.
func (s *sampler) warmUp(methods []Method, size int64) error {
	s.buffers(size)
	for _, m := range methods {
		if size > m.MaxSize {
			continue
		}
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
// be timed as part of the method (4 MiB of them cost a few hundred µs).
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
	if size <= maxPair {
		s.out2, s.in2 = s.out2All[:size], s.in2All[:size]
	}
}

// roundTrip sends one message (or a pair) to the peer and receives the
// same back; rank 0 times it. The result is half the round trip: the
// one-way time of the profile.
func (s *sampler) roundTrip(m Method) (time.Duration, error) {
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
