package job

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/commtune/commtune/internal/boot"
)

// abortTimeout bounds how long Abort waits for the launcher to take its
// request before the rank exits anyway.
const abortTimeout = 2 * time.Second

// abortSettle is how long a rank that printed its reason waits before
// asking a process manager to abort: Hydra kills every rank as soon as it
// has the request, and a line its proxy had not yet forwarded was lost
// (seen in about one run of three).
const abortSettle = 200 * time.Millisecond

// abortWith records how this rank's job can be aborted: through the
// launcher's key-value service when it takes requests (boot.Aborter), and
// whether that launcher prints the reason itself (commtune run does; a
// PMI process manager does not).
func (ep *Endpoint) abortWith(job *boot.Job) {
	if a, ok := job.KV.(boot.Aborter); ok {
		ep.aborter = a
		ep.launcherSays = job.Source == boot.SourceCommtune
	}
}

// Abort ends the whole job with code (MPI_Abort): the reason is printed
// once — by the launcher that takes the request, else here — the launcher
// is asked to stop every rank, and this process exits with code (1 when
// code is outside 0–255). It does not return.
func (ep *Endpoint) Abort(code int, reason string) {
	say := func() {
		fmt.Fprintf(os.Stderr, "commtune: rank %d aborted the job with code %d: %s\n", ep.Eng.Rank(), code, reason)
	}
	if !ep.launcherSays {
		say() // first: a process manager may stop this rank at the request
		if ep.aborter != nil {
			time.Sleep(abortSettle)
		}
	}
	if ep.aborter != nil {
		ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
		err := ep.aborter.Abort(ctx, code, reason)
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "commtune: rank %d: asking the launcher to abort: %v\n", ep.Eng.Rank(), err)
			if ep.launcherSays {
				say()
			}
		}
	}
	// Then the peers themselves, which exit with the code: a launcher
	// that takes no request (Hydra's PMI-2) or is slow to act still sees
	// every rank end, each with the code. After the launcher's request,
	// so that commtune run hears the abort before the ranks' exits.
	ep.Eng.AbortPeers(code, abortDrain)
	os.Exit(exitStatus(code))
}

// abortDrain bounds how long Abort waits for its word to the peers to
// leave.
const abortDrain = 500 * time.Millisecond

// exitStatus is code as a process's exit status: 1 when outside 0–255.
func exitStatus(code int) int {
	if code < 0 || code > 255 {
		return 1
	}
	return code
}

// exitOnAbort is a process rank's abort handler: a peer aborted the job,
// so this rank ends with the peer's code, saying nothing (the aborting
// rank or its launcher prints the reason).
func exitOnAbort(peer, code int) { os.Exit(exitStatus(code)) }
