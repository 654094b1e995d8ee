package job

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/driver/shm"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sched"
	"github.com/commtune/commtune/internal/topo"
)

// peerFacts is what, besides the profile and the configuration, decides
// how messages to one peer travel: the transport and rails that reach it
// and, on one node, how the two ranks' CPUs share caches.
type peerFacts struct {
	transport string
	rails     []driver.Caps
	canPull   bool         // the engine can read the peer's memory through a rail (core)
	sharing   topo.Sharing // whether the two ranks' CPUs share a cache
	dmaMin    int64        // seed 004's DMA_min for the pair (0: unknown)
}

// peerPlan is how messages to one peer travel: the protocol policy (the
// eager, iovec and large-method switch points) and how the scheduler
// spreads them over the peer's rails.
type peerPlan struct {
	Policy core.Policy
	// Tuning is what the profile decided for the policy, nil on the
	// defaults; TuneErr why the profile could not decide, if it could not.
	Tuning  *profile.Tuning
	TuneErr error
	peerScheduling
}

// planPeer is the one place that maps the profile, a peer's facts and the
// configuration (its overrides) to how messages to the peer travel. Init
// applies it to every peer; `commtune info`, `sample` and `demo` show it
// for a nominal peer of each transport (PlanFor), and the
// benchmarks read the policy Init set. agg is the transport's aggregation
// (aggregationFor), found once per transport.
// Only tcp and shm peers have a policy here: self and goroutine ranks
// keep the engine's.
func planPeer(prof *profile.Profile, f peerFacts, cfg config.Config, agg aggregation) peerPlan {
	var pl peerPlan
	switch f.transport {
	case "tcp":
		pl.Policy, pl.Tuning, pl.TuneErr = tcpPolicy(&cfg, prof)
	case "shm":
		pl.Policy, pl.Tuning, pl.TuneErr = shmPolicy(&cfg, f.shmPeer(), prof)
	}
	pl.peerScheduling = schedulingFor(prof, f.transport, f.rails, cfg, agg)
	return pl
}

// shmPeer is f as the shared-memory policy reads it. The Put methods are
// those every rail offers (a packet's method travels with each of its
// chunks, whichever rail carries it); a pull needs one rail that can.
func (f peerFacts) shmPeer() shmPeer {
	sp := shmPeer{sharing: f.sharing, dmaMin: f.dmaMin}
	sp.canPull = f.canPull && slices.ContainsFunc(f.rails, func(c driver.Caps) bool { return c.SingleCopy })
	sp.methods = driver.MethodNames(driver.CommonMethods(f.rails))
	return sp
}

// tcpPolicy is how messages to a peer over TCP travel: the profile's
// thresholds where the configuration sets none, else the defaults. It
// returns what the profile decided, or why it could not.
func tcpPolicy(c *config.Config, prof *profile.Profile) (core.Policy, *profile.Tuning, error) {
	p := core.Policy{Rendezvous: core.DefaultRendezvousThreshold, Iovec: core.DefaultIovecThreshold}
	var tu *profile.Tuning
	var err error
	if prof != nil {
		if tu, err = prof.Tune("tcp", nil); err == nil {
			p.Rendezvous, p.Iovec = int(tu.Rendezvous), int(tu.Iovec)
		}
	}
	if c.RendezvousThreshold != 0 {
		p.Rendezvous = c.RendezvousThreshold
	}
	if c.IovecThreshold != 0 {
		p.Iovec = c.IovecThreshold
	}
	if p.Iovec < 0 {
		p.Iovec = math.MaxInt
	}
	return p, tu, err
}

// shmPeer is what decides a local peer's policy besides the configuration
// and the profile.
type shmPeer struct {
	canPull bool         // this rank's sends may be pulled (CMA works)
	methods []string     // the rail's Put methods
	sharing topo.Sharing // whether the two ranks' CPUs share a cache
	dmaMin  int64        // seed 004's DMA_min for the pair (0: unknown)
}

// available lists the large-message methods usable with the peer, in the
// profile's naming.
func (sp shmPeer) available() []string {
	var out []string
	for _, m := range profile.LargeMethods {
		if core.MethodFor(m) == core.MethodPull && sp.canPull || slices.Contains(sp.methods, m) {
			out = append(out, m)
		}
	}
	return out
}

// shmPolicy is how messages to a local peer travel: through the ring up to
// the eager limit, then by the large-message method for their size. The
// profile decides what the configuration leaves unset; without one, the
// defaults and seed 004's rule apply.
func shmPolicy(c *config.Config, sp shmPeer, prof *profile.Profile) (core.Policy, *profile.Tuning, error) {
	var tu *profile.Tuning
	var err error
	if prof != nil && (c.Shm.Method == "auto" || c.Shm.Method == "") {
		avail := sp.available()
		if c.Shm.DMAMin > 0 {
			avail = slices.DeleteFunc(avail, func(m string) bool { return m == "cachefree" })
		}
		if tu, err = prof.Tune("shm", avail); err != nil {
			tu = nil // no shm samples: the rule below
		}
	}
	eager, iovec := config.DefaultShmEager, 1
	if tu != nil {
		eager, iovec = int(tu.Rendezvous), int(tu.Iovec)
	}
	if c.Shm.Eager != 0 {
		eager = max(c.Shm.Eager, 0)
	}
	if c.Shm.Iovec != 0 {
		iovec = c.Shm.Iovec
		if iovec < 0 {
			iovec = math.MaxInt
		}
	}
	p := core.Policy{Rendezvous: eager, Iovec: iovec}
	big := eager + 1
	switch m := c.Shm.Method; {
	case tu != nil:
		for _, r := range tu.Large {
			p.Large = append(p.Large, core.LargeMethod{Min: int(r.From), Method: coreMethod(r.Method)})
		}
		if c.Shm.DMAMin > 0 && slices.Contains(sp.methods, "cachefree") {
			p.Large = append(p.Large, core.LargeMethod{Min: int(max(c.Shm.DMAMin, int64(big))), Method: "cachefree"})
		}
		return p, tu, nil
	case core.MethodFor(m) == core.MethodPull && sp.canPull, m == "auto" && sp.canPull && sp.sharing == topo.SharingNone:
		p.Large = []core.LargeMethod{{Min: big, Method: core.MethodPull}}
	case m == "vmsplice" || m == "cachefree":
		p.Large = []core.LargeMethod{{Min: big, Method: m}}
	default: // copy, or cma where the kernel forbids it
		p.Large = []core.LargeMethod{{Min: big, Method: "copy"}}
	}
	if dmaMin := sp.dmaMin; c.Shm.Method == "auto" && (dmaMin > 0 || c.Shm.DMAMin > 0) && slices.Contains(sp.methods, "cachefree") {
		if c.Shm.DMAMin > 0 {
			dmaMin = c.Shm.DMAMin
		}
		p.Large = append(p.Large, core.LargeMethod{Min: int(max(dmaMin, int64(big))), Method: "cachefree"})
	}
	return p, nil, err
}

// coreMethod turns a profile's rendezvous curve name ("rendezvous/cma")
// into the core's method name ("pull").
func coreMethod(curve string) string {
	return core.MethodOfCurve(curve)
}

// peerScheduling is how the scheduler treats what is sent to one peer:
// its strategy and, for each rail, the model a split predicts from.
type peerScheduling struct {
	Strategy    sched.Strategy
	Models      []*sched.RailModel // by rail; nil where the profile has no curve
	Aggregation int                // bytes, 0: none
	// Why says, one line each, where the choices came from.
	Why []string
}

// schedulingFor is the one place that decides a peer's scheduling from
// the profile, the rails that reach it, the configuration and the
// transport's aggregation (aggregationFor, the same for every peer of a
// transport); Init calls it for every peer.
func schedulingFor(prof *profile.Profile, transport string, rails []driver.Caps, cfg config.Config, aggr aggregation) peerScheduling {
	var ps peerScheduling
	agg := aggr.size
	ps.Aggregation = agg
	ps.Why = append(ps.Why, aggr.why)
	if len(rails) < 2 || cfg.Split == config.SplitOff {
		if len(rails) >= 2 {
			ps.Why = append(ps.Why, fmt.Sprintf("%d rails, whole messages on whichever is idle (%s=%s)", len(rails), config.EnvSplit, config.SplitOff))
		}
		if agg > 0 {
			ps.Strategy = sched.Aggregate{Max: 2 * agg}
		} else {
			ps.Strategy = sched.Default{}
		}
		return ps
	}
	var tr *profile.Transport
	if prof != nil {
		tr = prof.Transports[transport]
	}
	ps.Models = make([]*sched.RailModel, len(rails))
	var missing []string
	for i, r := range rails {
		var c profile.Curve
		if tr != nil {
			c = tr.Rails[r.Name]
		}
		if len(c) == 0 {
			missing = append(missing, r.Name)
			continue
		}
		m, err := sched.NewRailModel(c.Points())
		if err != nil {
			missing = append(missing, r.Name)
			continue
		}
		ps.Models[i] = m
	}
	rule := map[string]sched.SplitRule{config.SplitCurves: sched.SplitCurves, config.SplitWeighted: sched.SplitWeighted, config.SplitIso: sched.SplitIso}[cfg.Split]
	ps.Strategy = sched.Split{Rule: rule, Aggregate: 2 * agg}
	switch {
	case len(missing) > 0 && cfg.Split != config.SplitIso:
		ps.Why = append(ps.Why, fmt.Sprintf("%d rails; no sampled curve for %s: whole messages on whichever is idle (run `commtune sample --in-job` between two hosts)",
			len(rails), strings.Join(missing, ", ")))
		for i := range ps.Models {
			ps.Models[i] = nil // a split needs every rail's prediction
		}
	default:
		ps.Why = append(ps.Why, fmt.Sprintf("%d rails, large messages split (%s)", len(rails), cfg.Split))
	}
	return ps
}

// aggregation is a transport's aggregation threshold (0: off) and where it
// comes from.
type aggregation struct {
	size int
	why  string
}

// aggregationFor is the aggregation threshold for peers on transport and
// where it comes from.
func aggregationFor(prof *profile.Profile, transport string, cfg config.Config) aggregation {
	switch {
	case cfg.Aggregation < 0:
		return aggregation{0, fmt.Sprintf("aggregation off (%s=off)", config.EnvAggregate)}
	case cfg.Aggregation > 0:
		return aggregation{cfg.Aggregation, fmt.Sprintf("aggregation below %d bytes (%s)", cfg.Aggregation, config.EnvAggregate)}
	}
	if prof != nil {
		if tu, err := prof.Tune(transport, nil); err == nil {
			if tu.Aggregation <= 0 {
				return aggregation{0, "aggregation off: never faster in the profile"}
			}
			return aggregation{int(tu.Aggregation), fmt.Sprintf("aggregation below %d bytes (profile)", tu.Aggregation)}
		}
	}
	if d := config.DefaultAggregation[transport]; d > 0 {
		return aggregation{d, fmt.Sprintf("aggregation below %d bytes (default)", d)}
	}
	return aggregation{0, "aggregation off (default)"}
}

// PlanFor returns what Init decides, under this environment's
// configuration and profile prof (nil: none), for a nominal peer of
// transport, without starting a job: for "tcp", one reached by the
// configured rails, else by the rails prof has curves for; for "shm", one
// on this node with every shared-memory method and single copy available,
// cache sharing unknown.
func PlanFor(prof *profile.Profile, transport string) (control.Plan, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return control.Plan{}, fmt.Errorf("commtune: %w", err)
	}
	f := peerFacts{transport: transport}
	switch transport {
	case "tcp":
		names := config.RailIdentities(cfg.Rails)
		if len(cfg.Rails) == 0 && prof != nil && prof.Transports["tcp"] != nil {
			if rails := prof.Transports["tcp"].Rails; len(rails) > 0 {
				names = slices.Sorted(maps.Keys(rails))
			}
		}
		for i, n := range names {
			f.rails = append(f.rails, driver.Caps{Transport: "tcp", Rail: i, Name: n, Iovec: true})
		}
	case "shm":
		f.rails = []driver.Caps{{Transport: "shm", Local: true, Iovec: true, SingleCopy: true, Methods: shm.Methods()}}
		f.canPull = true
	default:
		return control.Plan{}, fmt.Errorf("commtune: transport %q: want shm or tcp", transport)
	}
	pl := planPeer(prof, f, cfg, aggregationFor(prof, transport, cfg))
	return control.Plan{Policy: pl.Policy, Tuning: pl.Tuning, TuneErr: pl.TuneErr,
		Strategy: pl.Strategy.Name(), Why: pl.Why}, nil
}
