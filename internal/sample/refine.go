package sample

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/commtune/commtune/internal/profile"
)

// Refinement bounds: rounds of probes per stage, and the round trips a
// point sampled again may gather, as a multiple of a coarse point's.
const (
	maxRefineRounds = 8
	maxRepsFactor   = 4
)

// refine samples again where the curves of methods so far leave a
// threshold uncertain (profile.Transport.Refine): round after round, rank 0
// chooses the probes, most urgent first, that fit in what is left of
// budget, tells rank 1, and both time them as a phase does. It ends when
// nothing is uncertain, the budget is spent or after maxRefineRounds.
func (s *sampler) refine(methods []Method, budget time.Duration) error {
	if budget <= 0 { // both ranks have the same plan
		return nil
	}
	start := time.Now()
	s.clock = func() float64 { return float64(time.Since(start)) / float64(max(budget, 1)) }
	s.base, s.span = s.done, refineUnits
	defer func() {
		s.clock = nil
		s.done = s.base + s.span
	}()
	for round := 0; ; round++ {
		var items []item
		if s.me == 0 && round < maxRefineRounds {
			if left := budget - time.Since(start); left > 0 {
				items = s.probes(methods, left)
			}
		}
		items, err := s.shareItems(items, methods)
		if err != nil || len(items) == 0 {
			return err
		}
		if err := s.phase(items, s.refineBlocks()); err != nil {
			return err
		}
	}
}

// refineBlocks is the rounds a probe takes: as many as a coarse point, at
// most collBlocks — a probe spends its time at one size, not a whole grid.
func (s *sampler) refineBlocks() int { return min(s.plan.Blocks, collBlocks) }

// probes turns what profile.Refine asks for into items of methods: those
// of the stage that apply at each size, as many as fit in left by the
// curves' own prediction of their round trips (at least one).
func (s *sampler) probes(methods []Method, left time.Duration) []item {
	t := &profile.Transport{MaxEager: s.eagerMax, Methods: map[string]profile.Curve{}}
	for m := range s.rtts {
		t.Methods[m] = s.curve(m)
	}
	enough := func(size int64) int { return maxRepsFactor * s.plan.Blocks * s.plan.Reps(size) }
	var items []item
	var cost time.Duration
	for _, p := range t.Refine(nil, enough) {
		var ms []Method
		var d time.Duration
		for _, m := range methods {
			if slices.Contains(p.Methods, m.Name) && p.Size <= m.MaxSize {
				ms = append(ms, m)
				// A block settles for settleTime or one round trip, then
				// times Reps of them.
				rt := 2 * time.Duration(s.curve(m.Name).At(float64(p.Size)))
				d += time.Duration(s.refineBlocks()) * (max(settleTime, rt) + time.Duration(s.plan.Reps(p.Size))*rt)
			}
		}
		if len(ms) == 0 {
			continue
		}
		// Each round of the item starts with a state probe: its settling
		// and a few small round trips.
		d += time.Duration(s.refineBlocks()) * 2 * probeSettle
		if len(items) > 0 && cost+d > left {
			break
		}
		items, cost = append(items, item{size: p.Size, methods: ms}), cost+d
		if len(items) == maxProbes {
			break
		}
	}
	return items
}

// shareItems sends rank 0's items to rank 1, as sizes and a bit per method
// of methods, and returns them on both.
func (s *sampler) shareItems(items []item, methods []Method) ([]item, error) {
	const rec = 12
	if len(methods) > 32 {
		return nil, fmt.Errorf("sample: %d methods to refine, at most 32", len(methods))
	}
	if s.me == 0 {
		b := make([]byte, 0, rec*len(items))
		for _, it := range items {
			var mask uint32
			for i, m := range methods {
				if slices.ContainsFunc(it.methods, func(x Method) bool { return x.Name == m.Name }) {
					mask |= 1 << i
				}
			}
			b = binary.LittleEndian.AppendUint64(b, uint64(it.size))
			b = binary.LittleEndian.AppendUint32(b, mask)
		}
		if err := s.c.Send(s.ctx, b, s.peer, tagCtl); err != nil {
			return nil, err
		}
		return items, nil
	}
	b := make([]byte, rec*maxProbes)
	st, err := s.c.Recv(s.ctx, b, s.peer, tagCtl)
	if err != nil {
		return nil, err
	}
	items = nil
	for b = b[:st.Count]; len(b) >= rec; b = b[rec:] {
		it := item{size: int64(binary.LittleEndian.Uint64(b))}
		mask := binary.LittleEndian.Uint32(b[8:])
		for i, m := range methods {
			if mask&(1<<i) != 0 {
				it.methods = append(it.methods, m)
			}
		}
		items = append(items, it)
	}
	return items, nil
}

// maxProbes bounds the items of one refinement round (rank 1's buffer).
const maxProbes = 4096
