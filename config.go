package commtune

import (
	"fmt"
	"os"

	"github.com/commtune/commtune/internal/config"
)

// Config holds commtune's tunable parameters, field by field documented
// with its default and environment variable. A zero field means its
// default. Settings apply in this order, later ones winning: defaults,
// environment variables (listed in the README), then Options passed to
// Init or Local.
type Config = config.Config

// ShmConfig tunes the shared-memory transport between ranks of one node
// (Config.Shm); zero fields mean their defaults.
type ShmConfig = config.ShmConfig

// Option adjusts the Config used by Init or Local.
type Option = config.Option

// Environment variables read by commtune (the launcher's COMMTUNE_RANK and
// friends are listed in the README with the job variables).
const (
	EnvRendezvousThreshold = config.EnvRendezvousThreshold
	EnvIovecThreshold      = config.EnvIovecThreshold
	EnvUnexpectedLimit     = config.EnvUnexpectedLimit
	EnvRails               = config.EnvRails
	EnvConnectTimeout      = config.EnvConnectTimeout
	EnvSpinWait            = config.EnvSpinWait
	EnvProfile             = config.EnvProfile
	// EnvCollPrefix + an operation's name in capitals forces its
	// algorithm: COMMTUNE_COLL_BCAST, COMMTUNE_COLL_ALLREDUCE …
	EnvCollPrefix = config.EnvCollPrefix
	// EnvCollSelect chooses how collective algorithms are selected.
	EnvCollSelect = config.EnvCollSelect
	// EnvCollPull sets from which size collectives over shared memory are
	// pulled (single copy).
	EnvCollPull = config.EnvCollPull
	// EnvBind says whether ranks bind to a processor each.
	EnvBind          = config.EnvBind
	EnvLotteryAlpha  = config.EnvLotteryAlpha
	EnvLotteryWeight = config.EnvLotteryWeight
	EnvLotteryMinTTL = config.EnvLotteryMinTTL
	EnvLotteryMaxTTL = config.EnvLotteryMaxTTL
	EnvTuneState     = config.EnvTuneState
	EnvHaloSelect    = config.EnvHaloSelect
	EnvHaloSamples   = config.EnvHaloSamples
	EnvHaloOrder     = config.EnvHaloOrder
	EnvHaloState     = config.EnvHaloState
	EnvSplit         = config.EnvSplit
	EnvAggregate     = config.EnvAggregate
	EnvCounters      = config.EnvCounters
	EnvTrace         = config.EnvTrace
	EnvPprofLabels   = config.EnvPprofLabels
	EnvTransports    = config.EnvTransports
	EnvShmEager      = config.EnvShmEager
	EnvShmIovec      = config.EnvShmIovec
	EnvShmMethod     = config.EnvShmMethod
	EnvShmDMAMin     = config.EnvShmDMAMin
	EnvShmRing       = config.EnvShmRing
	EnvShmChunk      = config.EnvShmChunk
	EnvShmBudget     = config.EnvShmBudget
	EnvShmCMA        = config.EnvShmCMA
	EnvShmQueue      = config.EnvShmQueue
)

// Config.CollSelect values.
const (
	CollSelectLearn   = config.CollSelectLearn
	CollSelectTable   = config.CollSelectTable
	CollSelectFixed   = config.CollSelectFixed
	CollSelectLottery = config.CollSelectLottery
)

// The Config.HaloSelect methods; any other value names an implementation.
const (
	HaloSelectLearn      = config.HaloSelectLearn // the default
	HaloSelectBrute      = config.HaloSelectBrute
	HaloSelectHypothesis = config.HaloSelectHypothesis
)

// The orders of a halo selection's measurements (Config.HaloOrder).
const (
	HaloOrderInterleaved = config.HaloOrderInterleaved
	HaloOrderConsecutive = config.HaloOrderConsecutive
)

// Config.Split values.
const (
	SplitCurves   = config.SplitCurves
	SplitWeighted = config.SplitWeighted
	SplitIso      = config.SplitIso
	SplitOff      = config.SplitOff
)

// ProfileOff is the Config.Profile value that disables the profile.
const ProfileOff = config.ProfileOff

// TuneStateOff is the Config.TuneState value that keeps no lottery state.
const TuneStateOff = config.TuneStateOff

// HaloStateOff is the Config.HaloState value that keeps no halo decisions.
const HaloStateOff = config.HaloStateOff

// DefaultConnectTimeout is Config.ConnectTimeout's default.
const DefaultConnectTimeout = config.DefaultConnectTimeout

// DefaultShmEager is ShmConfig.Eager's default.
const DefaultShmEager = config.DefaultShmEager

// ShmMethods are the names ShmConfig.Method accepts.
var ShmMethods = config.ShmMethods

// ShmQueueModes are the values ShmConfig.Queue accepts.
var ShmQueueModes = config.ShmQueueModes

// DefaultTransports is Config.Transports' default: shared memory between
// ranks of one node, TCP between nodes.
var DefaultTransports = config.DefaultTransports

// DefaultAggregation is, per transport, the size under which two queued
// messages travel in one frame when no profile says (Config.Aggregation).
var DefaultAggregation = config.DefaultAggregation

// buildConfig applies the environment, then opts, to the defaults.
func buildConfig(opts []Option) (Config, error) {
	c, err := config.Build(os.LookupEnv, opts)
	if err != nil {
		return c, fmt.Errorf("commtune: %w", err)
	}
	return c, nil
}
