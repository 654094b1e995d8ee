// Package config holds every setting of commtune: the Config struct and
// its defaults, the COMMTUNE_* variables that map onto it, their
// validation, and where the files the settings name live (the profile,
// the lottery's state, the halo decisions). It does no communication; the
// root package re-exports Config and its names for users.
package config

import (
	"slices"
	"time"

	"github.com/commtune/commtune/internal/control"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/tune"
)

// Config holds commtune's tunable parameters. A zero field means its
// documented default. Settings apply in this order, later ones winning:
// defaults, environment variables (listed per field and in the README),
// then Options passed to Init or Local.
type Config struct {
	// RendezvousThreshold is the largest message sent eagerly (header and
	// payload at once); larger ones use rendezvous (RTS, CTS, then the data
	// straight into the receive buffer). Default: the profile's threshold,
	// else 64 KiB.
	// Env: COMMTUNE_RNDV_THRESHOLD (a size: 32K, 1M …).
	RendezvousThreshold int
	// IovecThreshold is the smallest eager payload handed to the transport
	// by reference (writev of header and user buffer); smaller payloads are
	// copied behind the header. Default: the profile's threshold, else
	// 2 KiB; negative means always copy.
	// Env: COMMTUNE_IOVEC_THRESHOLD (a size, 0 for every payload, or never).
	IovecThreshold int
	// UnexpectedLimit bounds the memory a rank uses to buffer eager messages
	// that arrive before their receive is posted, shared equally among
	// senders as credits; a sender out of credit switches to rendezvous, so
	// nothing is lost. Must be equal on all ranks. Default 64 MiB.
	// Env: COMMTUNE_UNEXPECTED_LIMIT.
	UnexpectedLimit int64
	// Rails are where TCP listens, one rail each: hosts, host:port or
	// interface names ("eth1"); every rank must list the same number.
	// Default: on a job within one node, one rail on 127.0.0.1; across
	// nodes, every network all its nodes are on (at most 4), the one that
	// reaches the launcher (or Hydra's -iface) first.
	// Env: COMMTUNE_RAILS (comma-separated).
	Rails []string
	// SpinWait is how long a goroutine waiting for a request polls the
	// network itself, with no byte arriving, before parking. Polling lets
	// the waiting goroutine receive its message with no thread wake-up
	// (3–30 µs on a virtual machine) and keeps it on the processor that
	// will use it; parking frees the processor. Default 200 µs. When more
	// ranks run on this node than it has processors, a waiter yields its
	// processor (sched_yield) after every poll that finds nothing, so the
	// rank it waits for runs, and the default is 2 ms. A small collective
	// on the node segment, whose ranks each have a processor, polls 5 ms
	// by default (SegmentSpin). Negative means never poll.
	// Env: COMMTUNE_SPIN_WAIT (a Go duration: 50us, 0s, -1s).
	SpinWait time.Duration
	// Transports names the transports to use: "shm" for ranks on this node
	// (when listed), "tcp" for the others. Default shm,tcp.
	// Env: COMMTUNE_TRANSPORTS (e.g. tcp to use TCP on one node too).
	Transports []string
	// Bind is how Init places this rank's threads on the node's
	// processors: "auto" binds each rank to a processor of its own (the
	// local rank's among those it may run on, GOMAXPROCS 1 unless set)
	// when every rank of the node can have one, and leaves the placement
	// to the kernel otherwise (more ranks than processors, or a launcher
	// that bound the rank already); "none" never binds — for a node that
	// several jobs share, whose ranks would otherwise take the same
	// processors. Unbound, the kernel placed the threads of two ranks on
	// two processors well in some runs and badly in others: 64 KiB
	// Allgathers back to back averaged 13–64 µs a call over eight runs
	// (31.8 on average), bound 16–24 (19.5), the median call 6.7 µs
	// either way. Open MPI binds likewise by default. Default auto.
	// Env: COMMTUNE_BIND.
	Bind string
	// Shm tunes the shared-memory transport.
	Shm ShmConfig
	// ConnectTimeout bounds how long Init waits for every peer to connect.
	// Default 30 s. Env: COMMTUNE_CONNECT_TIMEOUT (a Go duration).
	ConnectTimeout time.Duration
	// Profile is the tuning profile `commtune sample` wrote: its path, or
	// "" for this platform's in the cache directory
	// ($XDG_CACHE_HOME/commtune, else ~/.cache/commtune), or "off" to run
	// on the defaults without looking for one. Thresholds set explicitly
	// (fields above, or their variables) override the profile's.
	// Env: COMMTUNE_PROFILE.
	Profile string
	// Collectives forces collective algorithms: operation name (bcast,
	// allreduce …) → algorithm, as `commtune bench coll` names it or in
	// short ("binomial:seg=16K"). Every rank must force the same. A forced
	// algorithm that cannot keep a non-commutative reduction in rank order
	// is not used for one. Default: the fixed decision table
	// (docs/collectives.md).
	// Env: COMMTUNE_COLL_<OP>, e.g. COMMTUNE_COLL_BCAST=binomial:seg=16K.
	Collectives map[string]string
	// CollPull is the size from which the decision table's collective
	// algorithms that move data (the reductions from 1 MiB only: below,
	// their ranks, copying and reducing on their own processor, lost)
	// have their messages read in place by their receivers
	// (single copy, seed 004 §4.2) where ranks can read each other's
	// memory: the vector for bcast and the reductions, one block
	// otherwise. 0 takes the default: DefaultCollPull when the node's
	// ranks outnumber its processors (each saved copy is processor time
	// another rank needs; measured here, 4 ranks on 2 processors moved
	// 32 KiB Alltoalls 1.8 times faster pulled), else never (with a
	// processor each, two ranks pipeline a copy through the ring faster
	// than one reads across). A negative value never pulls.
	// Env: COMMTUNE_COLL_PULL (bytes, K/M suffixes, or "off").
	CollPull int
	// CollSelect is how a blocking collective call whose algorithm is not
	// forced (Collectives, WithAlgorithm) gets one: "learn", learned while
	// the program runs — a call the node's shared memory carries (the node
	// segment, or goroutine ranks' direct algorithms) runs there, which no
	// message family approaches at those sizes, and every other is drawn
	// by the lottery scheduler (seed 001 §6) among a few candidates, the
	// table's choice first, rank 0 of the communicator drawing; "lottery",
	// the lottery for every call, the shared-memory ones included;
	// "table", the decision table `commtune sample` measured on this
	// machine (the profile's) where it has the call's operation and ranks,
	// the fixed table in code elsewhere, never learning; "fixed", the
	// fixed table alone. Every rank must set the same. Default learn.
	// Env: COMMTUNE_COLL_SELECT.
	CollSelect string
	// LotteryAlpha is the share of the lottery's tickets held by the
	// candidate with the best average time (seed 001 §6.1.2), in (0, 1].
	// Default 0.8. Env: COMMTUNE_LOTTERY_ALPHA.
	LotteryAlpha float64
	// LotteryWeight is the weight of a call's time in its candidate's
	// exponential average, in (0, 1]. Default 1/8: the average spans about
	// the last 15 samples. Env: COMMTUNE_LOTTERY_WEIGHT.
	LotteryWeight float64
	// LotteryMinTTL and LotteryMaxTTL bound the calls one draw of the
	// lottery stands for: the best candidate runs ⌊α·LotteryMaxTTL⌋ calls
	// per draw, any other at least LotteryMinTTL. A switch of algorithm
	// costs by itself (the first call after one took up to nine times its
	// steady time at 1 MiB here), so windows are long and the first call
	// after a switch is not timed. Each from 1 to 65536, min ≤ max.
	// Defaults 4 and 32; with only one set, the other follows it where its
	// default would cross it. Env: COMMTUNE_LOTTERY_MIN_TTL,
	// COMMTUNE_LOTTERY_MAX_TTL.
	LotteryMinTTL, LotteryMaxTTL int
	// TuneState is the file where the lottery's learning is kept between
	// jobs (seed 001 §6.1.3): rank 0 of a job of several processes restores
	// the lottery from it at Init and adds what it learned at Close, under
	// a lock, so jobs sharing it lose nothing. "" for this platform's,
	// next to the profile and named by the same fingerprint
	// (<profile path without .json>.tune.json); "off" to keep nothing; or
	// a path. Used with CollSelect "learn" and "lottery"; goroutine ranks (Local)
	// keep nothing. Env: COMMTUNE_TUNE_STATE.
	TuneState string
	// HaloSelect is how a Halo created without WithHaloImpl gets its
	// implementation: "learn" races the packed two-sided implementations
	// (the prior) by successive halving over turns of a few exchanges,
	// then, while the winner runs, probes the others one turn at a time
	// every 256 exchanges and races again the one a probe finds faster;
	// "brute" measures every implementation HaloSamples times and keeps
	// the fastest (seed 003 §II-A); "hypothesis" settles one attribute at
	// a time and measures fewer (seed 003 §III); the name of an
	// implementation (HaloImpls) uses it alone, without measuring. After a
	// selection the winner's time is watched, and the selection starts
	// again when it drifts. Every rank must set the same. Default learn.
	// Env: COMMTUNE_HALO_SELECT.
	HaloSelect string
	// HaloSamples is how many exchanges measure each implementation during
	// a brute or hypothesis halo selection. Default 10. Env:
	// COMMTUNE_HALO_SAMPLES.
	HaloSamples int
	// HaloOrder is the order of a brute or hypothesis halo selection's
	// measurements:
	// "interleaved", one exchange of each implementation in turn, which
	// spreads a slow spell of the machine over all of them; or
	// "consecutive", HaloSamples exchanges of one implementation in a row
	// (ADCL's order), so that each is measured after itself. Every rank
	// must set the same. Default interleaved. Env: COMMTUNE_HALO_ORDER.
	HaloOrder string
	// HaloState is the file where the winners of halo selections are kept
	// between jobs, keyed by platform, topology and array shape, so that a
	// rerun starts on the winner without exploring: "" for this
	// platform's, next to the profile (<profile path without
	// .json>.halo.json), used by jobs of several processes; "off" to keep
	// nothing; or a path, used by every job, goroutine ranks included.
	// Env: COMMTUNE_HALO_STATE.
	HaloState string

	// Split is how a large message to a peer reached by several rails is
	// divided among them: "curves", chunks solved on each rail's sampled
	// curve to finish together, counting when each busy rail frees (seed
	// 000 §III-C); "weighted", the seed's N-rail rule by asymptotic
	// bandwidth; "iso", equal chunks; "off", whole messages, one rail each.
	// Without a profile holding the rails' curves, "curves" and "weighted"
	// send whole messages. Default curves. Env: COMMTUNE_SPLIT.
	Split string
	// Aggregation is the size under which two messages queued for one
	// peer travel in one frame (seed 000 §II-D): 0 takes the profile's
	// threshold for the peer's transport, else the built-in default per
	// transport (DefaultAggregation); a negative value turns aggregation
	// off. Env: COMMTUNE_AGGREGATE (bytes, K/M suffixes, or "off").
	Aggregation int

	// Counters says whether each communicator counts its calls, bytes,
	// time and paths for Comm.Profile: "on" (the default) or "off". Env:
	// COMMTUNE_COUNTERS.
	Counters string
	// Trace is a directory where each rank writes the timeline of its calls
	// (docs/trace.md); "" for none. Env: COMMTUNE_TRACE.
	Trace string
	// PprofLabels says whether the goroutine making a library call carries
	// the pprof labels {commtune: operation, rank: R} for its time ("on"),
	// so that CPU profiles tell library time from the program's; "off" by
	// default: two label switches a call. The library's own goroutines
	// carry theirs always. Env: COMMTUNE_PPROF_LABELS.
	PprofLabels string

	collForced map[coll.Operation]coll.Algorithm // Collectives, parsed
	envText    envText                           // the variables set, to name them in errors
	yieldWait  bool                              // ranks outnumber processors: waiters yield between polls
	tap        *control.Tap                      // collects the endpoints built (WithTap)
}

// Option adjusts the Config used by Init or Local.
type Option func(*Config)

// WithTap has the endpoints built under the Config added to t: how
// commtune's own tools reach the machinery behind their communicators.
func WithTap(t *control.Tap) Option { return func(c *Config) { c.tap = t } }

// TapOf returns the Tap c's endpoints go to, nil for none.
func TapOf(c *Config) *control.Tap { return c.tap }

// Environment variables read by commtune (the launcher's COMMTUNE_RANK and
// friends are listed in the README with the job variables).
const (
	EnvRendezvousThreshold = "COMMTUNE_RNDV_THRESHOLD"
	EnvIovecThreshold      = "COMMTUNE_IOVEC_THRESHOLD"
	EnvUnexpectedLimit     = "COMMTUNE_UNEXPECTED_LIMIT"
	EnvRails               = "COMMTUNE_RAILS"
	EnvConnectTimeout      = "COMMTUNE_CONNECT_TIMEOUT"
	EnvSpinWait            = "COMMTUNE_SPIN_WAIT"
	EnvProfile             = "COMMTUNE_PROFILE"
	// EnvCollPrefix + an operation's name in capitals forces its
	// algorithm: COMMTUNE_COLL_BCAST, COMMTUNE_COLL_ALLREDUCE …
	EnvCollPrefix = "COMMTUNE_COLL_"
	// EnvCollSelect chooses how collective algorithms are selected.
	EnvCollSelect    = "COMMTUNE_COLL_SELECT"
	EnvCollPull      = "COMMTUNE_COLL_PULL"
	EnvLotteryAlpha  = "COMMTUNE_LOTTERY_ALPHA"
	EnvLotteryWeight = "COMMTUNE_LOTTERY_WEIGHT"
	EnvLotteryMinTTL = "COMMTUNE_LOTTERY_MIN_TTL"
	EnvLotteryMaxTTL = "COMMTUNE_LOTTERY_MAX_TTL"
	EnvTuneState     = "COMMTUNE_TUNE_STATE"
	EnvHaloSelect    = "COMMTUNE_HALO_SELECT"
	EnvHaloSamples   = "COMMTUNE_HALO_SAMPLES"
	EnvHaloOrder     = "COMMTUNE_HALO_ORDER"
	EnvHaloState     = "COMMTUNE_HALO_STATE"
	EnvSplit         = "COMMTUNE_SPLIT"
	EnvBind          = "COMMTUNE_BIND"
	EnvAggregate     = "COMMTUNE_AGGREGATE"
	EnvCounters      = "COMMTUNE_COUNTERS"
	EnvTrace         = "COMMTUNE_TRACE"
	EnvPprofLabels   = "COMMTUNE_PPROF_LABELS"
)

// The collective lottery's TTL bounds (Config.LotteryMinTTL and
// LotteryMaxTTL). Measured at 2 000 calls on 4 ranks over shm (bcast and
// allreduce at 1 KiB and 1 MiB, two runs each), the lottery's mean time
// over the best fixed algorithm's averaged 1.28 with windows of 1 to 8
// calls and 1.15 with 4 to 32.
const (
	defaultLotteryMinTTL = 4
	defaultLotteryMaxTTL = 32
)

// MaxTTL bounds the lottery's TTLs (Config.LotteryMinTTL and
// LotteryMaxTTL) and a draw's window on the wire.
const MaxTTL = 1 << 16

// Config.CollSelect values.
const (
	CollSelectLearn   = "learn"
	CollSelectTable   = "table"
	CollSelectFixed   = "fixed"
	CollSelectLottery = "lottery"
)

// ProfileOff is the Config.Profile value that disables the profile.
const ProfileOff = "off"

// TuneStateOff is the Config.TuneState value that keeps no lottery state.
const TuneStateOff = "off"

// DefaultConnectTimeout is Config.ConnectTimeout's default.
const DefaultConnectTimeout = 30 * time.Second

// The Config.HaloSelect methods; any other value names an implementation.
const (
	HaloSelectLearn      = tune.MethodLearn
	HaloSelectBrute      = tune.MethodBrute
	HaloSelectHypothesis = tune.MethodHypothesis
)

// HaloSelectors lists the Config.HaloSelect methods, the default first.
var HaloSelectors = []string{HaloSelectLearn, HaloSelectBrute, HaloSelectHypothesis}

// IsHaloSelector reports whether name is a Config.HaloSelect method
// rather than an implementation.
func IsHaloSelector(name string) bool { return slices.Contains(HaloSelectors, name) }

// HaloStateOff is the Config.HaloState value that keeps no halo decisions.
const HaloStateOff = "off"

// The orders of a halo selection's measurements (Config.HaloOrder).
const (
	HaloOrderInterleaved = "interleaved" // one exchange of each implementation in turn
	HaloOrderConsecutive = "consecutive" // HaloSamples exchanges of each in a row, as ADCL
)

// MaxHaloSamples bounds Config.HaloSamples: a selection over every
// implementation costs samples × 20 exchanges.
const MaxHaloSamples = 1000

// Config.Bind values.
const (
	BindAuto = "auto"
	BindNone = "none"
)

// Config.Split values.
const (
	SplitCurves   = "curves"
	SplitWeighted = "weighted"
	SplitIso      = "iso"
	SplitOff      = "off"
)

// MaxAggregation bounds COMMTUNE_AGGREGATE: aggregation is for small
// messages, and a frame never exceeds a rail's packet limit anyway.
const MaxAggregation = 1 << 20

// DefaultAggregation is, per transport, the size under which two queued
// messages travel in one frame when no profile says (Config.Aggregation).
// Off on both: measured with `commtune bench rate` (64 messages of 8 B to
// 1 KiB in flight), aggregating changed the rate by 0.75–1.12× over tcp
// and 0.85–1.12× over shm, within the noise: a tcp post of a small frame
// completes in the kernel's send buffer, and the shm ring takes it at
// once, so a queue for the strategy to merge rarely forms.
var DefaultAggregation = map[string]int{
	"tcp": 0,
	"shm": 0,
}

// Build builds the Config from lookup (os.LookupEnv) and opts in three passes, so that an error names the
// setting that is wrong and not another one it upsets: each variable alone
// as it is read (its name, its text, what it accepts); then each field the
// Options set, alone (Config.X); then the settings that must agree, named
// by where each value came from.
func Build(lookup func(string) (string, bool), opts []Option) (Config, error) {
	var c Config
	if err := c.applyEnv(lookup); err != nil {
		return c, err
	}
	fromEnv := c // to tell the environment's values from the Options'
	for _, o := range opts {
		o(&c)
	}
	if err := c.checkFields(); err != nil {
		return c, err
	}
	if err := c.checkTogether(fromEnv); err != nil {
		return c, err
	}
	c.fillDefaults()
	if err := c.parseCollectives(); err != nil {
		return c, err
	}
	if err := c.checkHalo(); err != nil {
		return c, err
	}
	if err := c.checkMultirail(); err != nil {
		return c, err
	}
	if err := c.checkBind(); err != nil {
		return c, err
	}
	// The checks above cover these; the packages' own stay as guards.
	if err := c.LotteryConfig().Validate(); err != nil {
		return c, err
	}
	return c, c.CoreConfig().Validate()
}
