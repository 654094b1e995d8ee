package core

import (
	"fmt"
	"slices"

	"github.com/commtune/commtune/internal/driver"
)

// Policy is how messages to one peer travel: the eager and iovec switch
// points, then, for rendezvous messages, a method by size. The tuning
// profile sets it per transport; until then the public layer's defaults.
// Path names the way it sends a message of each size.
type Policy struct {
	// Rendezvous is the largest message sent eagerly.
	Rendezvous int
	// Iovec is the smallest eager payload sent by reference.
	Iovec int
	// Large lists rendezvous methods by size: each applies from its Min
	// bytes to the next entry's Min. MethodPull has the receiver copy a
	// contiguous send straight from the sender's memory (driver.Puller);
	// other names are Put methods (driver.MethodNamed), which every rail
	// to the peer must offer. Empty: the rail's default push.
	Large []LargeMethod
}

// LargeMethod is one entry of Policy.Large.
type LargeMethod struct {
	Min    int
	Method string
}

// MethodPull names the receiver-pull rendezvous in Policy.Large.
const MethodPull = "pull"

// largeEntry is one entry of Policy.Large, resolved: a pull, or the Put
// method that moves the data.
type largeEntry struct {
	min  int
	name string
	pull bool
	put  driver.Method
}

// largeMethods is Policy.Large by increasing Min, equal ones in the
// policy's order (the last of them applies).
type largeMethods []largeEntry

// sortLarge returns large as largeMethods, Put methods resolved by name
// (MethodDefault where the name is unknown: resolveMethods refuses it).
func sortLarge(large []LargeMethod) largeMethods {
	sorted := slices.Clone(large)
	slices.SortStableFunc(sorted, func(a, b LargeMethod) int { return a.Min - b.Min })
	lm := make(largeMethods, len(sorted))
	for i, l := range sorted {
		lm[i] = largeEntry{min: l.Min, name: l.Method, pull: l.Method == MethodPull}
		lm[i].put, _ = driver.MethodNamed(l.Method)
	}
	return lm
}

// pick returns the index of the entry a rendezvous message of n bytes
// takes, or -1 for the rail's default push: the last entry whose Min is
// at or below n, skipping pulls unless the message can be pulled. Only a
// contiguous send can be (an RTS-pull names one address): a vector send
// or a one-sided put takes the last Put method at or below its size.
func (lm largeMethods) pick(n int, pullable bool) int {
	k := -1
	for i, e := range lm {
		if n >= e.min && (pullable || !e.pull) {
			k = i
		}
	}
	return k
}

// put returns the Put method of entry i (pick's answer).
func (lm largeMethods) put(i int) driver.Method {
	if i < 0 {
		return driver.MethodDefault
	}
	return lm[i].put
}

// resolveMethods checks a policy's methods against the rails that reach a
// peer: every rail must offer each Put method named, since any of them
// may carry a packet's chunks; pull says whether some rail to the peer
// can pull.
func resolveMethods(large []LargeMethod, rails []driver.Caps, pull bool) (largeMethods, error) {
	lm := sortLarge(large)
	for _, e := range lm {
		switch {
		case e.pull:
			if !pull {
				return nil, fmt.Errorf("method %q: no rail can pull (single copy unavailable)", e.name)
			}
		case e.put == driver.MethodDefault:
			return nil, fmt.Errorf("method %q: no such method", e.name)
		default:
			for i, c := range rails {
				if !slices.Contains(c.Methods, e.put) {
					return nil, fmt.Errorf("method %q: rail %d (%s) offers %v", e.name, i, c.Transport, c.Methods)
				}
			}
		}
	}
	return lm, nil
}

// SetPolicy sets how messages to peer travel. The eager limit is capped by
// what one packet of the peer's rails can carry.
func (e *Engine) SetPolicy(peer int, p Policy) error {
	rails := e.sched.Rails(peer)
	for _, c := range rails {
		if c.MaxPacket > 0 && p.Rendezvous > c.MaxPacket-eagerHeaderLen {
			p.Rendezvous = c.MaxPacket - eagerHeaderLen
		}
	}
	var pm largeMethods
	// A pull is the receiver's, through a rail that can.
	pull := e.sched.CanPull(peer) && slices.ContainsFunc(rails, func(c driver.Caps) bool { return c.SingleCopy })
	if len(p.Large) > 0 {
		if len(rails) == 0 {
			return fmt.Errorf("no rail reaches rank %d", peer)
		}
		var err error
		if pm, err = resolveMethods(p.Large, rails, pull); err != nil {
			return fmt.Errorf("rank %d: %w", peer, err)
		}
	}
	e.mu.Lock()
	e.peers[peer].rndv, e.peers[peer].iovec, e.peers[peer].methods = p.Rendezvous, p.Iovec, pm
	e.peers[peer].pullable = pull
	e.peers[peer].policy = p
	e.mu.Unlock()
	return nil
}

// Policy returns how messages to peer travel now (the eager limit as
// capped by the rails).
func (e *Engine) Policy(peer int) Policy {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.peers[peer].policy
	p.Rendezvous, p.Iovec = e.peers[peer].rndv, e.peers[peer].iovec
	return p
}
