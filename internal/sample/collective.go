package sample

import "github.com/commtune/commtune/internal/profile"

// Collective phase: vectors from minCollective bytes (a multiple of 16,
// so that each rank's half is whole float64s), in at most collBlocks
// blocks (a quick pass: 3, at every other power of two).
const (
	minCollective = 1 << 10
	collBlocks    = 5
	// collMinRep is the fewest calls a block of a collective times: a
	// 4 MiB allreduce moves a quick block's budget in two, and the median
	// of two is the slower — one call held up by a writer waking took a
	// quick pass's point to twice what a program measured.
	collMinRep = 5
)

// collectiveSizes returns the planned sizes a collective phase times: a
// quick pass takes the powers of four up to 4 MiB. An allreduce's time is
// close to affine in its size between them (and beyond the last, where the
// curve's last segment continues), and the demo's vectors (8 KiB, 256 KiB,
// 4 MiB) lie on or between them; the 16 MiB vectors took a third of the
// phase.
func collectiveSizes(plan Plan) []int64 {
	var sizes []int64
	for _, sz := range plan.Sizes {
		if sz >= minCollective && sz%16 == 0 && (!plan.Quick || sz&0x5555555555555555 != 0 && sz <= 4<<20) {
			sizes = append(sizes, sz)
		}
	}
	return sizes
}

// collBlocks is the blocks of each size in the collective phase.
func (p Plan) collBlocks() int { return min(p.Blocks, collBlocks) }

// collectivePhase times profile.Collective over the path of each method —
// its messages, half the vector each, sent as that method sends them — and
// returns on rank 0 the curves by method name. It times what a program
// sees: the vector just written, the ranks met at a barrier, the result in
// a second vector. No ping-pong shows this: both ranks send at once and
// combine between the rounds, with both processors busy (on two of them a
// 4 MiB allreduce took several times two one-way times of its halves).
func (s *sampler) collectivePhase(p2p []Method) (map[string]profile.Curve, error) {
	var methods []Method
	for _, m := range p2p {
		c := m
		c.Name, c.Op = collName(m.Name), profile.Collective
		if m.MaxSize < MaxSize {
			c.MaxSize = 2 * m.MaxSize // each rank sends half
		}
		methods = append(methods, c)
	}
	if err := s.phase(grid(methods, collectiveSizes(s.plan)), s.plan.collBlocks()); err != nil {
		return nil, err
	}
	if s.me != 0 {
		return nil, nil
	}
	out := map[string]profile.Curve{}
	for _, m := range p2p {
		if c := s.curve(collName(m.Name)); len(c) > 0 {
			out[m.Name] = c
		}
	}
	return out, nil
}

// collName is the pass's name of the collective over method's path,
// apart from method's own points.
func collName(method string) string { return profile.Collective + " " + method }
