package commtune

import (
	"context"

	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/job"
)

// Init finds the job this process belongs to and returns its world
// communicator. Under `commtune run` it reads the launcher's COMMTUNE_*
// variables, exchanges addresses through the launcher and connects to every
// other rank: through shared memory on its node, over TCP (authenticated
// with the job's secret) to the others. With no launcher it returns a
// communicator of size 1. Close the communicator before the process exits.
func Init(ctx context.Context, opts ...Option) (*Comm, error) {
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	ep, err := job.Init(ctx, cfg)
	if err != nil {
		return nil, err
	}
	world := comm.NewWorld(ep, ep.Eng.Rank(), ep.Eng.Size())
	if dir := ep.Cfg.Trace; dir != "" {
		if err := world.StartTrace(ctx, dir); err != nil {
			world.Close()
			return nil, err
		}
	}
	return wrap(world), nil
}
