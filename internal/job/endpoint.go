package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commtune/commtune/internal/boot"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/driver/inproc"
	"github.com/commtune/commtune/internal/driver/shm"
	"github.com/commtune/commtune/internal/halo"
	"github.com/commtune/commtune/internal/observe"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sched"
	"github.com/commtune/commtune/internal/topo"
	"github.com/commtune/commtune/internal/tune"
)

// Endpoint is one rank's machinery: the matching engine, the scheduler and
// the transports whose rails feed it, with what Init decided for them.
// Communicators share their world's Endpoint.
type Endpoint struct {
	Eng     *core.Engine
	Sched   *sched.Scheduler
	Cfg     config.Config    // the settings it was made with
	Profile *profile.Profile // the tuning profile, nil on defaults
	Lottery *tune.Lottery    // draws collective algorithms; nil: the fixed table
	Halo    halo.Settings    // how Halos select their implementation
	// CollPull is the sizes where the decision table's collectives pull
	// their messages (config.Config.CollPull): the configuration's, else
	// the profile's node pass for a job like this one, else the default
	// (CollPullFor). CollPullWhy says which.
	CollPull    profile.NodePullAt
	CollPullWhy string
	// CollTable is the decision table the profile's node passes sampled,
	// which decides before the fixed one where it has a call's operation
	// and ranks (CollTableFor); nil: the fixed table alone. CollTableWhy
	// says which.
	CollTable    *coll.Table
	CollTableWhy string
	// Shared is what the goroutine ranks of one process share (Local): the
	// same value on each of their endpoints; nil for a process's rank.
	Shared *Shared
	// JobID names the job (boot.EnvJob; made up for a job without a
	// launcher, and for goroutine ranks).
	JobID string
	// Obs counts the rank's calls and, when tracing, writes its timeline.
	Obs *observe.Recorder

	transports []driver.Transport
	release    func() error         // boot resources (the key-value connection)
	shmPeers   []int                // world ranks reached through shared memory
	nodeRanks  []int                // world ranks on this rank's node, ascending; nil: every rank (one process)
	nodeOf     []int                // each world rank's node, numbered by its lowest rank; nil: every rank on one
	cpus       map[int][]int        // CPUs each rank of this node may run on
	tuneStore  *tuneStore           // where the lottery's learning persists (tunestate.go); nil: nowhere
	models     [][]*sched.RailModel // by peer, by rail: what splits predict from (multirail.go)

	aborter      boot.Aborter // how Abort asks the launcher to end the job; nil: it cannot
	launcherSays bool         // that launcher prints an abort's reason itself

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool // close has begun: every communicator fails
}

// Shared is the state the endpoints of goroutine ranks of one process
// share: their communicators' teams (internal/comm), by their key, and
// their one-sided windows' memory (commtune.Window), by the window's
// context.
type Shared struct {
	Teams   sync.Map
	Windows sync.Map
}

// drainTimeout bounds how long Close waits for queued packets to leave.
const drainTimeout = 10 * time.Second

// NewEndpoint makes rank's endpoint in a job of size ranks, reaching only
// itself until transports are attached (Attach) and the rails made ready
// (Ready).
func NewEndpoint(rank, size int, cfg config.Config) (*Endpoint, error) {
	sc := sched.New(size, nil)
	eng, err := core.NewEngine(rank, size, cfg.CoreConfig(), sc)
	if err != nil {
		return nil, fmt.Errorf("commtune: %w", err)
	}
	sc.AddRail(inproc.Self(rank, eng))
	ep := &Endpoint{Eng: eng, Sched: sc, cpus: map[int][]int{}, Cfg: cfg,
		Obs: observe.NewRecorder(rank, cfg.Counters != "off", cfg.PprofLabels == "on")}
	if cfg.Learns() {
		if ep.Lottery, err = tune.NewLottery(cfg.LotteryConfig()); err != nil {
			return nil, fmt.Errorf("commtune: %w", err)
		}
	}
	config.TapOf(&cfg).Add(rank, ep)
	return ep, nil
}

// Attach adds t's rails to every peer it reaches.
func (ep *Endpoint) Attach(t driver.Transport) {
	ep.transports = append(ep.transports, t)
	for p := 0; p < ep.Eng.Size(); p++ {
		for _, r := range t.Rails(p) {
			ep.Sched.AddRail(r)
		}
	}
}

// AttachShm adds shared-memory transport s, which reaches local (world
// ranks of this node, this one included).
func (ep *Endpoint) AttachShm(s *shm.Transport, local []int) {
	ep.Attach(s)
	ep.shmPeers = slices.DeleteFunc(slices.Clone(local), func(p int) bool { return p == ep.Eng.Rank() })
}

// Fail ends this rank's goroutine transports with err, as a crash of a
// process would: peers see the rank lost.
func (ep *Endpoint) Fail(err error) {
	for _, t := range ep.transports {
		if f, ok := t.(interface{ Fail(error) }); ok {
			f.Fail(err)
		}
	}
}

// Crash ends this goroutine rank as a crash of its process would, for
// tests of what survivors do: its peers see it lost, it sends nothing
// more, and its own pending and later calls fail with core.ErrClosed.
func (ep *Endpoint) Crash(err error) {
	ep.Fail(err) // first: what its calls say as they fail must not reach the peers
	ep.closed.Store(true)
	ep.Eng.Close()
}

// Ready applies the protocol policy once every rail is known and fails
// peers no transport reaches.
func (ep *Endpoint) Ready(cfg config.Config) error {
	var missing []int
	for p := 0; p < ep.Eng.Size(); p++ {
		if len(ep.Sched.Rails(p)) == 0 {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("commtune: no transport reaches ranks %v", missing)
	}
	if err := ep.oneTransportEach(); err != nil {
		return err
	}
	ep.Eng.Configure()
	var machine *topo.Topology
	if len(ep.shmPeers) > 0 {
		machine, _ = topo.Read() // unknown topology: no cache-free tier
	}
	aggs := map[string]aggregation{}
	for p := 0; p < ep.Eng.Size(); p++ {
		f := ep.factsFor(p, machine)
		if f.transport != "tcp" && f.transport != "shm" {
			continue // self and goroutine ranks: the configuration's
		}
		agg, ok := aggs[f.transport]
		if !ok {
			agg = aggregationFor(ep.Profile, f.transport, cfg)
			aggs[f.transport] = agg
		}
		plan := planPeer(ep.Profile, f, cfg, agg)
		if err := ep.Eng.SetPolicy(p, plan.Policy); err != nil {
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

// oneTransportEach checks that every peer's rails belong to one
// transport: a peer's plan (and Transport) is that transport's.
func (ep *Endpoint) oneTransportEach() error {
	for p := 0; p < ep.Eng.Size(); p++ {
		rails := ep.Sched.Rails(p)
		for _, r := range rails[1:] {
			if r.Transport != rails[0].Transport {
				return fmt.Errorf("commtune: rank %d is reached by rails of %s and %s: one transport per peer", p, rails[0].Transport, r.Transport)
			}
		}
	}
	return nil
}

// factsFor gathers what decides peer's plan besides the profile and the
// configuration; machine is this node's topology (nil: unknown).
func (ep *Endpoint) factsFor(peer int, machine *topo.Topology) peerFacts {
	f := peerFacts{transport: ep.Transport(peer), rails: ep.Sched.Rails(peer), canPull: ep.Sched.CanPull(peer)}
	if f.transport == "shm" && machine != nil {
		mine, theirs := ep.cpus[ep.Eng.Rank()], ep.cpus[peer]
		f.dmaMin = machine.DMAMin(mine, theirs)
		f.sharing = machine.Sharing(mine, theirs)
	}
	return f
}

// Close drains what is queued, finalizes the engine and closes the
// transports, in that order, so an orderly exit loses no message; then it
// writes back what the lottery learned (tunestate.go).
func (ep *Endpoint) Close() error {
	ep.closeOnce.Do(func() {
		ep.closed.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
		err := ep.Sched.Drain(ctx)
		cancel()
		if err != nil {
			err = fmt.Errorf("commtune: close: packets still queued after %v", drainTimeout)
		}
		ep.Eng.Close()
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

// SharedMemory returns the bytes of shared memory the rank's transports
// hold for messages to it (shm.Transport.SharedMemory).
func (ep *Endpoint) SharedMemory() int64 {
	var n int64
	for _, t := range ep.transports {
		if m, ok := t.(interface{ SharedMemory() int64 }); ok {
			n += m.SharedMemory()
		}
	}
	return n
}

// Closed reports whether Close has begun: every communicator then fails.
func (ep *Endpoint) Closed() bool { return ep.closed.Load() }

// SameNode reports whether world rank r runs on this rank's node: the
// ranks of one process (Local) always do.
func (ep *Endpoint) SameNode(r int) bool {
	return ep.nodeRanks == nil || slices.Contains(ep.nodeRanks, r)
}

// NodeOf returns the node world rank r runs on: the lowest world rank
// there, the same on every rank of the job (0 for the ranks of one
// process, and for a rank out of range).
func (ep *Endpoint) NodeOf(r int) int {
	if r < 0 || r >= len(ep.nodeOf) {
		return 0
	}
	return ep.nodeOf[r]
}

// NodeLeader returns the lowest world rank on this rank's node: the same
// for every rank there, a color for splitting by node.
func (ep *Endpoint) NodeLeader() int {
	if len(ep.nodeRanks) == 0 {
		return 0
	}
	return ep.nodeRanks[0]
}
