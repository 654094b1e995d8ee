package job

import (
	"fmt"

	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/units"
)

// CollPullFor returns where the table's collectives pull their messages
// on a node of localRanks ranks and cpus processors, and why: COMMTUNE_COLL_PULL (Config.CollPull) if set; else the
// profile's node pass on the same side of oversubscription; else the
// default (config.DefaultCollPull where ranks outnumber processors).
// cfg must have had DefaultSpin applied for the same node.
func CollPullFor(cfg config.Config, prof *profile.Profile, localRanks, cpus int) (profile.NodePullAt, string) {
	if cfg.CollPull != 0 {
		return profile.NodePullAt{From: int64(cfg.CollPullFrom())}, "set (" + config.EnvCollPull + ")"
	}
	if prof != nil && prof.Transports["shm"] != nil {
		if at, ok := prof.Transports["shm"].CollPull(localRanks, cpus); ok {
			return at, "profile: " + at.String()
		}
	}
	from := cfg.CollPullFrom()
	if from == 0 {
		return profile.NodePullAt{}, fmt.Sprintf("default: never with %d ranks on %d processors", localRanks, cpus)
	}
	return profile.NodePullAt{From: int64(from)}, fmt.Sprintf("default: from %s with %d ranks on %d processors", units.FormatSize(int64(from)), localRanks, cpus)
}
