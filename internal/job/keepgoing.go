package job

import (
	"context"
	"time"

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
		if rank == job.Rank {
			return
		}
		lost := func() {
			if !ep.Closed() {
				ep.Eng.PeerLost(rank, boot.ErrRankLost)
			}
		}
		if reportDelay <= 0 {
			lost()
			return
		}
		time.AfterFunc(reportDelay, lost)
	})
}

// reportDelay is how long a rank holds a launcher's report of a loss
// before it fails what needs the lost peer. The report comes out of band:
// it can overtake messages the peer sent before it died that a transport
// still carries (a collective's last step, seen failing without it), and
// a transport that sees the death itself delivers those first. The report
// is for a peer no transport would notice soon, where a second matters
// little.
var reportDelay = time.Second
