package sample

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sched"
)

// Tags of the sampling traffic.
const (
	tagPing = 1
	tagA    = 2
	tagB    = 3
	tagCtl  = 4
	// tagSettled marks the last round trip a block runs unrecorded.
	tagSettled = 5
)

// Method is one way of moving messages that a pass times: how the sender
// treats them (Policy) and how the scheduler packs them (Strategy).
type Method struct {
	Name     string
	Policy   core.Policy
	Strategy sched.Strategy // nil: the default
	Pair     bool           // two messages per direction instead of one
	// Op, when set, is a collective (profile.Collective) timed whole, as
	// a program calls it, instead of a ping-pong.
	Op      string
	MaxSize int64 // largest size it applies to
}

// Progress is told of each finished step (rank 0 only).
type Progress func(done, total int, what string)

// Run is the sampling pass both ranks of a two-rank job call. It times
// every method of the transport that connects them and returns, on rank
// 0, that transport's name and curves (nil on rank 1).
//
// Each phase first samples its sizes coarsely, then — for the methods that
// thresholds are placed between — refines where the curves cross, or are
// close without the samples telling which is faster (profile.Refine),
// within the plan's time.
func Run(ctx context.Context, c *commtune.Comm, ep control.Endpoint, plan Plan, progress Progress) (string, *profile.Transport, error) {
	if c.Size() != 2 {
		return "", nil, fmt.Errorf("sample: a pass needs exactly 2 ranks, not %d", c.Size())
	}
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

	s := newSampler(ctx, c, ep, plan, progress, plan.Units())
	s.eagerMax = eagerMax
	if err := s.phase(grid(methods, plan.Sizes), plan.Blocks); err != nil {
		return "", nil, err
	}
	if err := s.refine(methods, plan.Refine*refineShare/100); err != nil {
		return "", nil, err
	}

	// Aggregation is compared with each message sent the better eager way
	// (seed 000 §III-B): rank 0 finds the iovec threshold and tells rank 1.
	var iovec int64
	if me == 0 {
		d := profile.Switch("iovec", s.curve(profile.EagerCopy), s.curve(profile.EagerIovec), profile.EagerCopy, profile.EagerIovec, 1, eagerMax)
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
	if err := s.phase(grid(pairs, plan.Sizes), plan.Blocks); err != nil {
		return "", nil, err
	}
	if err := s.refine(pairs, plan.Refine*(100-refineShare)/100); err != nil {
		return "", nil, err
	}
	colls, err := s.collectivePhase(methods)
	if err != nil {
		return "", nil, err
	}
	railCurves, err := s.railPhase(rails)
	if err != nil {
		return "", nil, err
	}
	if me != 0 {
		return transport, nil, nil
	}
	curves := map[string]profile.Curve{}
	for _, m := range append(methods, pairs...) {
		curves[m.Name] = s.curve(m.Name)
	}
	return transport, &profile.Transport{MaxEager: eagerMax, Methods: curves, Rails: railCurves,
		Collectives: map[string]map[string]profile.Curve{profile.Collective: colls}}, nil
}

// refineShare is the part of the plan's refinement time, in percent, that
// goes to the main phase's thresholds (iovec, rendezvous, large methods);
// the rest to aggregation.
const refineShare = 75

// grid lists each size with the methods that apply to it.
func grid(methods []Method, sizes []int64) []item {
	var items []item
	for _, sz := range sizes {
		var ms []Method
		for _, m := range methods {
			if sz <= m.MaxSize {
				ms = append(ms, m)
			}
		}
		if len(ms) > 0 {
			items = append(items, item{size: sz, methods: ms})
		}
	}
	return items
}

// Measure times each method at each size between the two ranks of c,
// which both call it with the same arguments. The methods take turns
// block by block (plan.Blocks blocks of plan.Reps round trips), so drift
// hits all alike; rank 0 returns each method's curve (rank 1 nil). The
// peer's policy and the strategy are restored afterwards.
func Measure(ctx context.Context, c *commtune.Comm, ep control.Endpoint, methods []Method, sizes []int64, plan Plan, progress Progress) (map[string]profile.Curve, error) {
	if c.Size() != 2 {
		return nil, fmt.Errorf("sample: measuring needs exactly 2 ranks, not %d", c.Size())
	}
	s := newSampler(ctx, c, ep, plan, progress, len(sizes)*plan.Blocks)
	defer func() {
		s.ep.SetPolicy(s.peer, s.saved)
		s.ep.SetStrategy(nil)
	}()
	if err := s.phase(grid(methods, sizes), plan.Blocks); err != nil {
		return nil, err
	}
	if s.me != 0 {
		return nil, nil
	}
	out := map[string]profile.Curve{}
	for _, m := range methods {
		// Every size of every method, so that callers compare them size
		// by size: a bump left out of one curve would shift the others.
		if c := s.points(m.Name); len(c) > 0 {
			out[m.Name] = c
		}
	}
	return out, nil
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
		if ep.SetPolicy(peer, core.Policy{Large: []core.LargeMethod{{Method: core.MethodFor(m)}}}) == nil {
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
		out = append(out, rndv(profile.RendezvousVia(m), core.LargeMethod{Method: core.MethodFor(m)}))
	}
	if len(out) == 0 {
		return nil, errors.New("sample: no large-message method works both ways")
	}
	return out, nil
}
