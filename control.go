package commtune

import (
	"slices"

	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/sched"
)

// The sampler and benchmarks drive the endpoint through internal/control.
func init() {
	control.Of = func(c any) control.Endpoint { return c.(*Comm).ep }
}

var _ control.Endpoint = (*endpoint)(nil)

func (ep *endpoint) Policy(peer int) core.Policy { return ep.eng.Policy(peer) }

func (ep *endpoint) SetPolicy(peer int, p core.Policy) error { return ep.eng.SetPolicy(peer, p) }

func (ep *endpoint) SetStrategy(s sched.Strategy) { ep.sched.SetStrategy(s) }

func (ep *endpoint) Cork(peer int) { ep.sched.Cork(peer) }

func (ep *endpoint) Uncork(peer int) { ep.sched.Uncork(peer) }

func (ep *endpoint) Rails(peer int) []driver.Caps { return ep.sched.Rails(peer) }

func (ep *endpoint) RailModels(peer int) []*sched.RailModel {
	if peer < 0 || peer >= len(ep.models) || ep.models[peer] == nil {
		return make([]*sched.RailModel, len(ep.sched.Rails(peer)))
	}
	return slices.Clone(ep.models[peer])
}

func (ep *endpoint) RailBytes(peer int) []int64 { return ep.sched.RailBytes(peer) }

func (ep *endpoint) EagerFrames(peer int) (frames, packets int64) { return ep.sched.EagerFrames(peer) }

func (ep *endpoint) Stats() core.Stats { return ep.eng.Stats() }

func (ep *endpoint) Transport(peer int) string {
	if peer == ep.eng.Rank() {
		return "self"
	}
	if rails := ep.sched.Rails(peer); len(rails) > 0 {
		return rails[0].Transport
	}
	return ""
}
