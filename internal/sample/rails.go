package sample

import (
	"fmt"

	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sched"
)

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
	blocks := min(s.plan.Blocks, railBlocks)
	s.total += len(sizes) * blocks
	if err := s.phase(grid(methods, sizes), blocks); err != nil {
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
			out[name] = s.curve(railMethod(i))
		}
	}
	return out, nil
}

// railMethod names the pass's method that uses rail i alone.
func railMethod(i int) string { return fmt.Sprintf("rail%d", i) }
