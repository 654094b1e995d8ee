package job

import (
	"fmt"

	"github.com/commtune/commtune/internal/sched"
)

// schedule gives peer its strategy and its rails' models.
func (ep *Endpoint) schedule(peer int, ps peerScheduling) error {
	ep.Sched.SetPeerStrategy(peer, ps.Strategy)
	if ps.Models == nil {
		return nil
	}
	if ep.models == nil {
		ep.models = make([][]*sched.RailModel, ep.Eng.Size())
	}
	ep.models[peer] = ps.Models
	for i, m := range ps.Models {
		if m == nil {
			continue
		}
		if err := ep.Sched.SetModel(peer, i, m); err != nil {
			return fmt.Errorf("commtune: rank %d: %w", peer, err)
		}
	}
	return nil
}
