package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"

	"github.com/commtune/commtune/internal/boot"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/driver/inproc"
)

// Init finds the job this process belongs to and returns this rank's
// endpoint, ready: under `commtune run` it reads the launcher's COMMTUNE_*
// variables, exchanges addresses through the launcher and connects to
// every other rank (shared memory on this node, TCP to the others,
// authenticated with the job's secret); with no launcher it is a job of
// one rank.
func Init(ctx context.Context, cfg config.Config) (*Endpoint, error) {
	job, err := boot.Discover(ctx)
	if err != nil {
		return nil, fmt.Errorf("commtune: init: %w", err)
	}
	cfg.DefaultSpin(job.LocalSize, runtime.NumCPU())
	shareProcessors(job.LocalSize, runtime.NumCPU(), os.Getenv("GOMAXPROCS") != "")
	if bindRank(cfg, job.LocalRank, job.LocalSize) >= 0 && os.Getenv("GOMAXPROCS") == "" {
		// One processor: more Ps would only take turns on it.
		runtime.GOMAXPROCS(1)
	}
	ep, err := NewEndpoint(job.Rank, job.Size, cfg)
	if err != nil {
		job.Close()
		return nil, err
	}
	ep.release = job.Close
	ep.JobID = job.ID
	if ep.JobID == "" {
		ep.JobID = fmt.Sprintf("single-%d", os.Getpid())
	}
	ep.abortWith(job)
	ep.Eng.SetAbortHandler(exitOnAbort)
	if job.Size > 1 {
		var hint string
		ep.Profile, hint = loadProfile(cfg)
		if hint != "" && job.Rank == 0 { // one line per job
			fmt.Fprintln(os.Stderr, hint)
		}
		ep.CollPull, ep.CollPullWhy = CollPullFor(cfg, ep.Profile, job.LocalSize, runtime.NumCPU())
		ep.CollTable, ep.CollTableWhy = CollTableFor(cfg, ep.Profile)
		if err := connectJob(ctx, ep, job, cfg); err != nil {
			return nil, errors.Join(fmt.Errorf("commtune: init: %w", err), ep.Close())
		}
	}
	if err := ep.Ready(cfg); err != nil {
		return nil, errors.Join(err, ep.Close())
	}
	if err := watchLosses(ctx, ep, job); err != nil {
		return nil, errors.Join(fmt.Errorf("commtune: init: %w", err), ep.Close())
	}
	if job.LocalSize > runtime.NumCPU() {
		// Connecting left megabytes of garbage (the key-value exchange,
		// the topology, the profile's decoding) that the collector's
		// first target, 4 MiB, keeps for the whole job: with more ranks
		// than processors on the node, each rank's pages are the node's
		// memory. One collection here, with the pages given back, costs
		// a millisecond once.
		debug.FreeOSMemory()
	}
	return ep, nil
}

// shareProcessors gives each of localRanks ranks on cpus processors its
// share of them, at least one, as the runtime's GOMAXPROCS, when ranks
// outnumber processors and the user did not set GOMAXPROCS (set says so).
// With more Ps than its share, a rank's runtime keeps threads looking for
// work and handing Ps back and forth on processors the other ranks need:
// measured here, 4 ranks on 2 processors, a barrier took 16.5 µs on
// average with 2 Ps per rank and 11.0 µs with 1. Without oversubscription
// nothing changes: with one P per rank, 2 ranks on 2 processors moved
// 1 MiB allreduces 1.0–1.6x slower.
func shareProcessors(localRanks, cpus int, set bool) {
	if set || localRanks <= cpus || cpus < 1 {
		return
	}
	if share := max(1, cpus/localRanks); share < runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(share)
	}
}

// localJobs numbers the jobs of goroutine ranks this process ran, for
// their ids.
var localJobs atomic.Int64

// Local returns the endpoints of n ranks of this process (n ≥ 1), joined
// by the in-process driver and ready.
func Local(n int, cfg config.Config) ([]*Endpoint, error) {
	cfg.DefaultSpin(n, runtime.GOMAXPROCS(0))
	fabric := inproc.NewFabric(n)
	shared := new(Shared)
	eps := make([]*Endpoint, n)
	id := fmt.Sprintf("local-%d-%d", os.Getpid(), localJobs.Add(1))
	for r := range n {
		ep, err := NewEndpoint(r, n, cfg)
		if err != nil {
			return nil, err
		}
		ep.Shared = shared
		ep.JobID = id
		ep.Attach(fabric.Attach(r, ep.Eng))
		if err := ep.Ready(cfg); err != nil {
			return nil, err
		}
		eps[r] = ep
	}
	return eps, nil
}
