package job

import (
	"context"

	"github.com/commtune/commtune/internal/boot"
)

// watchLosses makes the ranks the launcher reports lost (commtune run
// --keep-going) lost peers of ep's engine, as a transport that saw them
// die would: the second path to a loss, for a peer no connection of this
// rank would notice soon (a hung node, a peer this rank never talks to).
// Only in a keep-going job, whose launcher reports losses; elsewhere it
// does nothing.
func watchLosses(ctx context.Context, ep *Endpoint, job *boot.Job) error {
	w, ok := job.KV.(boot.LossWatcher)
	if !job.KeepGoing || !ok || job.Size < 2 {
		return nil
	}
	return w.WatchLosses(ctx, func(rank int) {
		if rank != job.Rank {
			ep.Eng.PeerLost(rank, boot.ErrRankLost)
		}
	})
}
