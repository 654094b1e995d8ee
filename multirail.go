package commtune

import (
	"fmt"
	"slices"

	"github.com/commtune/commtune/internal/sched"
	"github.com/commtune/commtune/internal/setting"
)

// Config.Split values.
const (
	SplitCurves   = "curves"
	SplitWeighted = "weighted"
	SplitIso      = "iso"
	SplitOff      = "off"
)

// maxAggregation bounds COMMTUNE_AGGREGATE: aggregation is for small
// messages, and a frame never exceeds a rail's packet limit anyway.
const maxAggregation = 1 << 20

// DefaultAggregation is, per transport, the size under which two queued
// messages travel in one frame when no profile says (Config.Aggregation).
// Off on both: measured with `commtune bench rate` (64 messages of 8 B to
// 1 KiB in flight), aggregating changed the rate by 0.75–1.12× over tcp
// and 0.85–1.12× over shm, within the noise: a tcp post of a small frame
// completes in the kernel's send buffer, and the shm ring takes it at
// once, so a queue for the strategy to merge rarely forms.
var DefaultAggregation = map[string]int{
	"tcp": 0,
	"shm": 0,
}

// checkMultirail validates the split and aggregation fields and fills
// their defaults.
func (c *Config) checkMultirail() error {
	// The environment's values were checked as they were read
	// (applyEnv): an error here is an Option's, named by its field.
	switch {
	case c.Split == "":
		c.Split = SplitCurves
	case !slices.Contains(splits, c.Split):
		return setting.Bad(setting.Field("Config.Split", c.Split), "%s", orList(splits))
	}
	if c.Aggregation > maxAggregation {
		return setting.Bad(setting.Field("Config.Aggregation", c.Aggregation),
			"at most %d bytes (0 for the default, negative for off)", maxAggregation)
	}
	return nil
}

// schedule gives peer its strategy and its rails' models.
func (ep *endpoint) schedule(peer int, ps peerScheduling) error {
	ep.sched.SetPeerStrategy(peer, ps.Strategy)
	if ps.Models == nil {
		return nil
	}
	if ep.models == nil {
		ep.models = make([][]*sched.RailModel, ep.eng.Size())
	}
	ep.models[peer] = ps.Models
	for i, m := range ps.Models {
		if m == nil {
			continue
		}
		if err := ep.sched.SetModel(peer, i, m); err != nil {
			return fmt.Errorf("commtune: rank %d: %w", peer, err)
		}
	}
	return nil
}
