package commtune

import (
	"fmt"
	"strings"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sched"
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
	switch c.Split {
	case "":
		c.Split = SplitCurves
	case SplitCurves, SplitWeighted, SplitIso, SplitOff:
	default:
		return fmt.Errorf("commtune: split %q (%s): want %s, %s, %s or %s",
			c.Split, EnvSplit, SplitCurves, SplitWeighted, SplitIso, SplitOff)
	}
	if c.Aggregation > maxAggregation {
		return fmt.Errorf("commtune: Aggregation %d (%s): want at most %d bytes, or negative for off",
			c.Aggregation, EnvAggregate, maxAggregation)
	}
	return nil
}

// peerScheduling is how the scheduler treats what is sent to one peer:
// its strategy and, for each rail, the model a split predicts from.
type peerScheduling struct {
	Strategy    sched.Strategy
	Models      []*sched.RailModel // by rail; nil where the profile has no curve
	Aggregation int                // bytes, 0: none
	// Why says, one line each, where the choices came from.
	Why []string
}

// schedulingFor is the one place that decides a peer's scheduling from
// the profile, the rails that reach it, the configuration and the
// transport's aggregation (aggregationFor, the same for every peer of a
// transport); Init calls it for every peer.
func schedulingFor(prof *profile.Profile, transport string, rails []driver.Caps, cfg Config, aggr aggregation) peerScheduling {
	var ps peerScheduling
	agg := aggr.size
	ps.Aggregation = agg
	ps.Why = append(ps.Why, aggr.why)
	if len(rails) < 2 || cfg.Split == SplitOff {
		if len(rails) >= 2 {
			ps.Why = append(ps.Why, fmt.Sprintf("%d rails, whole messages on whichever is idle (%s=%s)", len(rails), EnvSplit, SplitOff))
		}
		if agg > 0 {
			ps.Strategy = sched.Aggregate{Max: 2 * agg}
		} else {
			ps.Strategy = sched.Default{}
		}
		return ps
	}
	var tr *profile.Transport
	if prof != nil {
		tr = prof.Transports[transport]
	}
	ps.Models = make([]*sched.RailModel, len(rails))
	var missing []string
	for i, r := range rails {
		var c profile.Curve
		if tr != nil {
			c = tr.Rails[r.Name]
		}
		if len(c) == 0 {
			missing = append(missing, r.Name)
			continue
		}
		m, err := sched.NewRailModel(c.Points())
		if err != nil {
			missing = append(missing, r.Name)
			continue
		}
		ps.Models[i] = m
	}
	rule := map[string]sched.SplitRule{SplitCurves: sched.SplitCurves, SplitWeighted: sched.SplitWeighted, SplitIso: sched.SplitIso}[cfg.Split]
	ps.Strategy = sched.Split{Rule: rule, Aggregate: 2 * agg}
	switch {
	case len(missing) > 0 && cfg.Split != SplitIso:
		ps.Why = append(ps.Why, fmt.Sprintf("%d rails; no sampled curve for %s: whole messages on whichever is idle (run `commtune sample --in-job` between two hosts)",
			len(rails), strings.Join(missing, ", ")))
		for i := range ps.Models {
			ps.Models[i] = nil // a split needs every rail's prediction
		}
	default:
		ps.Why = append(ps.Why, fmt.Sprintf("%d rails, large messages split (%s)", len(rails), cfg.Split))
	}
	return ps
}

// aggregation is a transport's aggregation threshold (0: off) and where it
// comes from.
type aggregation struct {
	size int
	why  string
}

// aggregationFor is the aggregation threshold for peers on transport and
// where it comes from.
func aggregationFor(prof *profile.Profile, transport string, cfg Config) aggregation {
	switch {
	case cfg.Aggregation < 0:
		return aggregation{0, fmt.Sprintf("aggregation off (%s=off)", EnvAggregate)}
	case cfg.Aggregation > 0:
		return aggregation{cfg.Aggregation, fmt.Sprintf("aggregation below %d bytes (%s)", cfg.Aggregation, EnvAggregate)}
	}
	if prof != nil {
		if tu, err := prof.Tune(transport, nil); err == nil {
			if tu.Aggregation <= 0 {
				return aggregation{0, "aggregation off: never faster in the profile"}
			}
			return aggregation{int(tu.Aggregation), fmt.Sprintf("aggregation below %d bytes (profile)", tu.Aggregation)}
		}
	}
	if d := DefaultAggregation[transport]; d > 0 {
		return aggregation{d, fmt.Sprintf("aggregation below %d bytes (default)", d)}
	}
	return aggregation{0, "aggregation off (default)"}
}

// schedule gives peer its strategy and its rails' models. aggs holds each
// transport's aggregation once found: the profile is tuned once per
// transport, not once per peer.
func (ep *endpoint) schedule(peer int, cfg Config, aggs map[string]aggregation) error {
	transport := ep.Transport(peer)
	agg, ok := aggs[transport]
	if !ok {
		agg = aggregationFor(ep.profile, transport, cfg)
		aggs[transport] = agg
	}
	ps := schedulingFor(ep.profile, transport, ep.sched.Rails(peer), cfg, agg)
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
