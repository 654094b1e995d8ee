package job

import (
	"slices"

	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/sched"
)

// The sampler and benchmarks drive the endpoint through internal/control
// (control.Tap gives it to them).
var _ control.Endpoint = (*Endpoint)(nil)

func (ep *Endpoint) Policy(peer int) core.Policy { return ep.Eng.Policy(peer) }

func (ep *Endpoint) SetPolicy(peer int, p core.Policy) error { return ep.Eng.SetPolicy(peer, p) }

func (ep *Endpoint) SetStrategy(s sched.Strategy) { ep.Sched.SetStrategy(s) }

func (ep *Endpoint) Cork(peer int) { ep.Sched.Cork(peer) }

func (ep *Endpoint) Uncork(peer int) { ep.Sched.Uncork(peer) }

func (ep *Endpoint) Rails(peer int) []driver.Caps { return ep.Sched.Rails(peer) }

func (ep *Endpoint) RailModels(peer int) []*sched.RailModel {
	if peer < 0 || peer >= len(ep.models) || ep.models[peer] == nil {
		return make([]*sched.RailModel, len(ep.Sched.Rails(peer)))
	}
	return slices.Clone(ep.models[peer])
}

func (ep *Endpoint) RailBytes(peer int) []int64 { return ep.Sched.RailBytes(peer) }

// SearchedShare returns the scheduler's search of the split toward peer:
// the loaded rail whose share is searched (-1: none) and that share
// (sched.Scheduler.SearchedShare).
func (ep *Endpoint) SearchedShare(peer int) (rail int, share float64) {
	return ep.Sched.SearchedShare(peer)
}

func (ep *Endpoint) EagerFrames(peer int) (frames, packets int64) { return ep.Sched.EagerFrames(peer) }

// Observe sets what the rank's calls record (control.Endpoint).
func (ep *Endpoint) Observe(count, trace bool) { ep.Obs.Observe(count, trace) }

func (ep *Endpoint) Stats() core.Stats { return ep.Eng.Stats() }

// Transport names what reaches peer: "self", or the transport of every
// rail to it (Ready checks they share one).
func (ep *Endpoint) Transport(peer int) string {
	if peer == ep.Eng.Rank() {
		return "self"
	}
	if rails := ep.Sched.Rails(peer); len(rails) > 0 {
		return rails[0].Transport
	}
	return ""
}

// TransportMix names how the world ranks of group reach each other, as
// group[0] sees them: "self" for a group of one, where nothing travels,
// "inproc" for goroutine ranks, "shm" when all are on its node, "tcp"
// when none is, "shm+tcp" otherwise.
func (ep *Endpoint) TransportMix(group []int) string {
	if len(group) < 2 {
		return "self"
	}
	if len(ep.transports) == 0 || ep.Transport(group[1]) == "inproc" {
		return "inproc"
	}
	shm, tcp := false, false
	for _, w := range group[1:] {
		if slices.Contains(ep.shmPeers, w) {
			shm = true
		} else {
			tcp = true
		}
	}
	switch {
	case shm && tcp:
		return "shm+tcp"
	case shm:
		return "shm"
	}
	return "tcp"
}
