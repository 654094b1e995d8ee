package config

import (
	"time"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/tune"
)

// Forced returns the algorithm Collectives (or COMMTUNE_COLL_<OP>) forces
// for op, if any.
func (c *Config) Forced(op coll.Operation) (coll.Algorithm, bool) {
	a, ok := c.collForced[op]
	return a, ok
}

// oversubscribedSpin is how long a waiter polls, yielding its processor
// between polls, when ranks outnumber processors: long enough to cover a
// collective's rounds among ranks taking turns on the processors, short
// enough that a rank waiting for input does not keep taking turns.
const oversubscribedSpin = 2 * time.Millisecond

// segmentSpin is how long a rank waiting on the node segment polls by
// default while every rank has a processor of its own: measured here, 15
// runs of 2 000 two-rank Barriers each, polling 200 µs before sleeping
// left 4 runs at 8–92 µs a call (p99 up to 3.3 ms: once one rank slept,
// its wake-up outlasted the other's polling and both slept call after
// call); polling 5 ms, the worst run was 3 µs. MPI libraries poll without
// end.
const segmentSpin = 5 * time.Millisecond

// SegmentSpin returns how long a waiter on the node segment polls before
// it sleeps: SpinWait when set (or made a default by oversubscription),
// else segmentSpin; engine is the message waits' budget, for a SpinWait
// set to never poll.
func (c *Config) SegmentSpin(engine time.Duration) time.Duration {
	if c.SpinWait != 0 {
		return engine
	}
	return segmentSpin
}

// DefaultSpin sets the waiting defaults for localRanks ranks sharing cpus
// processors: when they are oversubscribed, waiters poll and yield the
// processor between polls (the default budget is then
// oversubscribedSpin).
func (c *Config) DefaultSpin(localRanks, cpus int) {
	if localRanks <= cpus {
		return
	}
	c.yieldWait = true
	if c.SpinWait == 0 {
		c.SpinWait = oversubscribedSpin
	}
}

// DefaultCollPull is CollPull's default where ranks outnumber
// processors.
const DefaultCollPull = 16 << 10

// CollPullFrom returns the size from which the table's collective
// algorithms pull their messages (CollPull), or 0 for never.
func (c *Config) CollPullFrom() int {
	switch {
	case c.CollPull > 0:
		return c.CollPull
	case c.CollPull < 0 || !c.yieldWait:
		return 0
	}
	return DefaultCollPull
}

// CoreConfig is what the matching core takes of c.
func (c *Config) CoreConfig() core.Config {
	return core.Config{
		RendezvousThreshold: c.RendezvousThreshold,
		IovecThreshold:      c.IovecThreshold,
		UnexpectedLimit:     c.UnexpectedLimit,
		SpinWait:            c.SpinWait,
		YieldWait:           c.yieldWait,
	}
}

// Learns reports whether collective algorithms are learned while the
// program runs: CollSelect "learn" or "lottery".
func (c *Config) Learns() bool {
	return c.CollSelect == CollSelectLearn || c.CollSelect == CollSelectLottery
}

// DrawsEverything reports whether the lottery draws every blocking call
// whose algorithm is not forced, the calls the node's shared memory would
// carry included (CollSelect "lottery"); under "learn" those run there.
func (c *Config) DrawsEverything() bool { return c.CollSelect == CollSelectLottery }

// LotteryConfig is the lottery's policy; the selector seeds its draws
// from the clock, as only rank 0 of a communicator draws.
func (c *Config) LotteryConfig() tune.LotteryConfig {
	return tune.LotteryConfig{Alpha: c.LotteryAlpha, Weight: c.LotteryWeight, MinTTL: c.LotteryMinTTL, MaxTTL: c.LotteryMaxTTL,
		Seed: uint64(time.Now().UnixNano())}
}
