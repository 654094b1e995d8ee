// Package core is commtune's matching engine and protocols: posted and
// unexpected queues per communicator context, per-(peer, context) sequence
// numbers so that messages never overtake one another, and the eager
// (copy or iovec) and rendezvous (RTS → CTS → data into the user's buffer)
// protocols, with credit-based flow control that bounds unexpected memory.
//
// The Engine speaks only in world ranks, context ids and bytes. It sends
// through a sched.Scheduler and receives as a driver.Handler; it never does
// I/O itself, so it can be driven and checked entirely in memory.
package core

import (
	"time"

	"github.com/commtune/commtune/internal/setting"
)

// Defaults for Config, used until a sampled profile says otherwise.
const (
	// DefaultRendezvousThreshold: messages above it use the rendezvous
	// protocol. 64 KiB is NewMadeleine's maximum unexpected size (seed 000
	// §II-B), the bound its sampled thresholds never exceed.
	DefaultRendezvousThreshold = 64 << 10
	// DefaultIovecThreshold: eager payloads of at least this many bytes are
	// handed to the rail by reference (iovec) rather than copied behind the
	// header; below it one small copy beats a second iovec element.
	DefaultIovecThreshold = 2 << 10
	// DefaultSpinWait is how long a waiting goroutine polls the network
	// without seeing a byte arrive before it parks. It covers many small
	// round trips and a peer's turnaround on medium messages; measured on
	// loopback TCP, 50 µs left 4 MiB ping-pong at 0.89–1.02× raw TCP and
	// 200 µs–2 ms at 0.95–1.06×. Polling continues as long as data flows.
	DefaultSpinWait = 200 * time.Microsecond
	// DefaultUnexpectedLimit bounds the eager payload bytes a rank buffers
	// for receives not yet posted, across all senders.
	DefaultUnexpectedLimit = 64 << 20
)

// Config holds the protocol parameters. The zero value of a field means
// its default.
type Config struct {
	// RendezvousThreshold is the largest message sent eagerly; larger ones
	// use RTS/CTS and land directly in the receiver's buffer. It is also
	// capped by each rail's MaxPacket.
	RendezvousThreshold int
	// IovecThreshold is the smallest eager payload sent by reference (an
	// iovec of header and user buffer); smaller ones are copied behind the
	// header into one contiguous packet and the send completes at once.
	// Negative means always copy.
	IovecThreshold int
	// UnexpectedLimit bounds the bytes of eager payload buffered for
	// receives not yet posted. Each sender gets an equal share as credits,
	// at most maxGrant; a sender out of credits falls back to rendezvous,
	// so nothing is lost and memory stays bounded. It must be the same on
	// every rank.
	UnexpectedLimit int64
	// SpinWait is how long Wait polls the network for a request, without
	// progress, before parking its goroutine. Negative means never poll.
	SpinWait time.Duration
	// YieldWait makes a polling waiter give its processor to the
	// machine's other runnable threads (sched_yield) each time a poll
	// finds nothing, as MPI libraries do when ranks outnumber processors:
	// the rank it waits for then runs at once, and the answer is seen at
	// the next poll, with no futex wake-up on either side.
	YieldWait bool
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.RendezvousThreshold == 0 {
		c.RendezvousThreshold = DefaultRendezvousThreshold
	}
	if c.IovecThreshold == 0 {
		c.IovecThreshold = DefaultIovecThreshold
	}
	if c.UnexpectedLimit == 0 {
		c.UnexpectedLimit = DefaultUnexpectedLimit
	}
	if c.SpinWait == 0 {
		c.SpinWait = DefaultSpinWait
	}
	return c
}

// Validate reports a field outside its range, named as in this package:
// commtune checks its own Config first, naming its variables and fields.
func (c Config) Validate() error {
	if c.RendezvousThreshold < 0 {
		return setting.Bad(setting.Field("core.Config.RendezvousThreshold", c.RendezvousThreshold), "a size in bytes (0 for the default)")
	}
	if c.UnexpectedLimit < 0 {
		return setting.Bad(setting.Field("core.Config.UnexpectedLimit", c.UnexpectedLimit), "a size in bytes (0 for the default)")
	}
	return nil
}
