package commtune

// Stats counts what a rank's protocol engine did, for tuning and tests.
type Stats struct {
	EagerCopySends  uint64 // eager sends whose payload was copied behind the header
	EagerIovecSends uint64 // eager sends handed to the transport by reference
	RendezvousSends uint64 // sends that used RTS/CTS
	CreditFallbacks uint64 // eager-sized sends sent by rendezvous for lack of credit
	PullSends       uint64 // rendezvous sends the receiver read straight from this rank's memory
	PulledBytes     uint64 // bytes this rank read straight from senders' memory
	PullFallbacks   uint64 // such reads that failed and fell back to the sender pushing
	UnexpectedBytes int64  // eager payload bytes buffered now for unposted receives
	UnexpectedPeak  int64  // the most ever buffered at once
	CopiedBytes     uint64 // bytes copied from eager packets into receive buffers
	PolledWaits     uint64 // waits that ended while the waiting goroutine polled the network
	SpinMisses      uint64 // waits that polled for the whole spin budget, then parked
	ParkedWaits     uint64 // waits that parked at once (spin budget exhausted or disabled)
	VectorSends     uint64 // sends of several memory regions in place (the halo's ddt implementations)
	VectorRecvs     uint64 // receives into several memory regions in place
	Puts            uint64 // one-sided puts into memory a peer exposed (the halo's Put implementations)
	Reads           uint64 // one-sided reads of a peer's memory in place (the halo's Get implementations)
	ReadBytes       uint64 // bytes those reads copied
	BusyRailWaits   int64  // times messages queued for a peer while every rail to it was busy: they waited for a rail
	// SharedMemory is the bytes of shared memory (/dev/shm) the rank holds
	// for messages to it: a header page, and a ring for each peer on its
	// node that has sent it something (pairs that never talk cost none).
	SharedMemory int64
}

// Stats returns the counters of the rank's engine (shared by every
// communicator of the rank); zeros for a nil communicator.
func (c *Comm) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	ep := c.in.Endpoint()
	s := ep.Eng.Stats()
	return Stats{
		EagerCopySends:  s.EagerCopySends,
		EagerIovecSends: s.EagerIovecSends,
		RendezvousSends: s.RendezvousSends,
		CreditFallbacks: s.CreditFallbacks,
		PullSends:       s.PullSends,
		PulledBytes:     s.PulledBytes,
		PullFallbacks:   s.PullFallbacks,
		UnexpectedBytes: s.UnexpectedBytes,
		UnexpectedPeak:  s.UnexpectedPeak,
		CopiedBytes:     s.CopiedBytes,
		PolledWaits:     s.PolledWaits,
		SpinMisses:      s.SpinMisses,
		ParkedWaits:     s.ParkedWaits,
		VectorSends:     s.VectorSends,
		VectorRecvs:     s.VectorRecvs,
		Puts:            s.Puts,
		Reads:           s.Reads,
		ReadBytes:       s.ReadBytes,
		BusyRailWaits:   ep.Sched.BusyWaits(),
		SharedMemory:    ep.SharedMemory(),
	}
}
