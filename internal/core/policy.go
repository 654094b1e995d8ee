package core

import (
	"fmt"
	"slices"

	"github.com/commtune/commtune/internal/driver"
)

// Policy is how messages to one peer travel: the eager and iovec switch
// points, then, for rendezvous messages, a method by size. The tuning
// profile sets it per transport; until then the public layer's defaults.
type Policy struct {
	// Rendezvous is the largest message sent eagerly.
	Rendezvous int
	// Iovec is the smallest eager payload sent by reference.
	Iovec int
	// Large lists rendezvous methods by size: each applies from its Min
	// bytes to the next entry's Min. Method "pull" has the receiver copy
	// straight from the sender's memory (driver.Puller); other names are
	// the rail's Put methods (driver.Caps.Methods). Empty: the rail's
	// default push.
	Large []LargeMethod
}

// LargeMethod is one entry of Policy.Large.
type LargeMethod struct {
	Min    int
	Method string
}

// MethodPull names the receiver-pull rendezvous in Policy.Large.
const MethodPull = "pull"

// peerMethods is Policy.Large resolved against a peer's rail.
type peerMethods struct {
	min    []int
	method []uint8 // Put method index; pullMethod for a pull
}

const pullMethod = 0xFF

// resolveMethods checks a policy's methods against one rail that reaches a
// peer; pull says whether some rail to it can pull.
func resolveMethods(large []LargeMethod, caps driver.Caps, pull bool) (peerMethods, error) {
	var pm peerMethods
	sorted := slices.Clone(large)
	slices.SortStableFunc(sorted, func(a, b LargeMethod) int { return a.Min - b.Min })
	for _, lm := range sorted {
		switch i := slices.Index(caps.Methods, lm.Method); {
		case lm.Method == MethodPull:
			if !pull {
				return pm, fmt.Errorf("method %q: no %s rail can pull (single copy unavailable)", lm.Method, caps.Transport)
			}
			pm.min, pm.method = append(pm.min, lm.Min), append(pm.method, pullMethod)
		case i >= 0:
			pm.min, pm.method = append(pm.min, lm.Min), append(pm.method, uint8(i+1))
		default:
			return pm, fmt.Errorf("method %q: the %s rail offers %v", lm.Method, caps.Transport, caps.Methods)
		}
	}
	return pm, nil
}

// pick returns the method for a rendezvous message of n bytes (0: the
// rail's default push).
func (pm *peerMethods) pick(n int) uint8 {
	m := uint8(0)
	for i, lo := range pm.min {
		if n >= lo {
			m = pm.method[i]
		}
	}
	return m
}

// pickPush is pick for a message that cannot be pulled (a vector send: an
// RTS-pull names a single address): the last Put method whose range
// starts at or below n, skipping pulls, else 0, the rail's default push
// (shm: copy through the ring, available on every rail).
func (pm *peerMethods) pickPush(n int) uint8 {
	m := uint8(0)
	for i, lo := range pm.min {
		if n >= lo && pm.method[i] != pullMethod {
			m = pm.method[i]
		}
	}
	return m
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
	var pm peerMethods
	if len(p.Large) > 0 {
		if len(rails) == 0 {
			return fmt.Errorf("no rail reaches rank %d", peer)
		}
		// A packet's Put method travels with each of its chunks, whichever
		// rail carries it: every rail must offer it, under one index. A
		// pull is the receiver's, through a rail that can.
		pull := e.sched.CanPull(peer) && slices.ContainsFunc(rails, func(c driver.Caps) bool { return c.SingleCopy })
		for i, c := range rails {
			r, err := resolveMethods(p.Large, c, pull)
			if err != nil {
				return fmt.Errorf("rank %d rail %d: %w", peer, i, err)
			}
			if i == 0 {
				pm = r
			} else if !slices.Equal(r.method, pm.method) {
				return fmt.Errorf("rank %d: rail %d offers the methods %v in another order than rail 0", peer, i, c.Methods)
			}
		}
	}
	e.mu.Lock()
	e.peers[peer].rndv, e.peers[peer].iovec, e.peers[peer].methods = p.Rendezvous, p.Iovec, pm
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

// PathFor names how a message of n bytes travels under p when credits
// allow: "eager" up to Rendezvous, else the Large method for its size
// ("pull", "copy", "cachefree" …), or "push", the rail's default Put.
func (p Policy) PathFor(n int) string {
	if n <= p.Rendezvous {
		return "eager"
	}
	path, from := "push", -1
	for _, lm := range p.Large {
		if n >= lm.Min && lm.Min >= from { // the last of equals wins, as in resolveMethods
			path, from = lm.Method, lm.Min
		}
	}
	return path
}
