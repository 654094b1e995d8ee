package job

import (
	"fmt"
	"os"

	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/halo"
)

// haloSettingsFor derives the endpoint's halo settings once its transports
// are known: like the lottery's state, decisions persist by default only
// for jobs of several processes, whose times say something of a real
// job's; an explicit path is used by every job.
func (ep *Endpoint) haloSettingsFor(cfg config.Config) {
	ep.Halo = halo.Settings{Method: cfg.HaloSelect, Samples: cfg.HaloSamples, Order: cfg.HaloOrder}
	if cfg.HaloState == config.HaloStateOff {
		return
	}
	fp := cfg.Platform()
	ep.Halo.Platform = fp.ID
	if cfg.HaloState != "" {
		ep.Halo.Path = cfg.HaloState
		return
	}
	if ep.Eng.Size() < 2 || ep.Transport((ep.Eng.Rank()+1)%ep.Eng.Size()) == "inproc" {
		return
	}
	path, err := cfg.HaloStatePath(fp)
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune: halo decisions are not kept (%v); set %s to a file path\n", err, config.EnvHaloState)
		return
	}
	ep.Halo.Path = path
}
