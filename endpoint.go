package commtune

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/driver/inproc"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sched"
	"github.com/commtune/commtune/internal/topo"
	"github.com/commtune/commtune/internal/tune"
)

// endpoint is one rank's machinery: the matching engine, the scheduler and
// the transports whose rails feed it.
type endpoint struct {
	eng        *core.Engine
	sched      *sched.Scheduler
	transports []driver.Transport
	release    func() error         // boot resources (the key-value connection)
	shmPeers   []int                // world ranks reached through shared memory
	profile    *profile.Profile     // the tuning profile, nil on defaults
	cpus       map[int][]int        // CPUs each rank of this node may run on
	cfg        Config               // the settings it was made with
	lottery    *tune.Lottery        // draws collective algorithms; nil: the fixed table
	tuneStore  *tuneStore           // where the lottery's learning persists (tunestate.go); nil: nowhere
	halo       haloSettings         // how Halos select their implementation (halo_select.go)
	models     [][]*sched.RailModel // by peer, by rail: what splits predict from (multirail.go)

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool // close has begun: every communicator fails
}

// drainTimeout bounds how long Close waits for queued packets to leave.
const drainTimeout = 10 * time.Second

func newEndpoint(rank, size int, cfg Config) (*endpoint, error) {
	sc := sched.New(size, nil)
	eng, err := core.NewEngine(rank, size, cfg.CoreConfig(), sc)
	if err != nil {
		return nil, fmt.Errorf("commtune: %w", err)
	}
	sc.AddRail(inproc.Self(rank, eng))
	ep := &endpoint{eng: eng, sched: sc, cpus: map[int][]int{}, cfg: cfg}
	if cfg.CollSelect == CollSelectLottery {
		if ep.lottery, err = tune.NewLottery(cfg.LotteryConfig()); err != nil {
			return nil, fmt.Errorf("commtune: %w", err)
		}
	}
	return ep, nil
}

// attach adds t's rails to every peer it reaches.
func (ep *endpoint) attach(t driver.Transport) {
	ep.transports = append(ep.transports, t)
	for p := 0; p < ep.eng.Size(); p++ {
		for _, r := range t.Rails(p) {
			ep.sched.AddRail(r)
		}
	}
}

// ready applies the protocol policy once every rail is known and fails
// peers no transport reaches.
func (ep *endpoint) ready(cfg Config) error {
	var missing []int
	for p := 0; p < ep.eng.Size(); p++ {
		if len(ep.sched.Rails(p)) == 0 {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("commtune: no transport reaches ranks %v", missing)
	}
	ep.eng.Configure()
	var machine *topo.Topology
	if len(ep.shmPeers) > 0 {
		machine, _ = topo.Read() // unknown topology: no cache-free tier
	}
	aggs := map[string]aggregation{}
	for p := 0; p < ep.eng.Size(); p++ {
		f := ep.factsFor(p, machine)
		if f.transport != "tcp" && f.transport != "shm" {
			continue // self and goroutine ranks: the configuration's
		}
		agg, ok := aggs[f.transport]
		if !ok {
			agg = aggregationFor(ep.profile, f.transport, cfg)
			aggs[f.transport] = agg
		}
		plan := planPeer(ep.profile, f, cfg, agg)
		if err := ep.eng.SetPolicy(p, plan.Policy); err != nil {
			return fmt.Errorf("commtune: %s to rank %d: %w", f.transport, p, err)
		}
		if err := ep.schedule(p, plan.peerScheduling); err != nil {
			return err
		}
	}
	ep.openTuneState(cfg)
	ep.haloSettingsFor(cfg)
	return nil
}

// factsFor gathers what decides peer's plan besides the profile and the
// configuration; machine is this node's topology (nil: unknown).
func (ep *endpoint) factsFor(peer int, machine *topo.Topology) peerFacts {
	f := peerFacts{transport: ep.Transport(peer), rails: ep.sched.Rails(peer), canPull: ep.sched.CanPull(peer)}
	if f.transport == "shm" && machine != nil {
		mine, theirs := ep.cpus[ep.eng.Rank()], ep.cpus[peer]
		f.dmaMin = machine.DMAMin(mine, theirs)
		f.sharing = machine.Sharing(mine, theirs)
	}
	return f
}

// close drains what is queued, finalizes the engine and closes the
// transports, in that order, so an orderly exit loses no message; then it
// writes back what the lottery learned (tunestate.go).
func (ep *endpoint) close() error {
	ep.closeOnce.Do(func() {
		ep.closed.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
		err := ep.sched.Drain(ctx)
		cancel()
		if err != nil {
			err = fmt.Errorf("commtune: close: packets still queued after %v", drainTimeout)
		}
		ep.eng.Close()
		errs := []error{err}
		for _, t := range ep.transports {
			errs = append(errs, t.Close())
		}
		if ep.release != nil {
			errs = append(errs, ep.release())
		}
		ep.saveTuneState() // last: a wait for another job's save delays no peer
		ep.closeErr = errors.Join(errs...)
	})
	return ep.closeErr
}

// isShmPeer reports whether world rank w is reached through shared memory.
func (ep *endpoint) isShmPeer(w int) bool { return slices.Contains(ep.shmPeers, w) }
