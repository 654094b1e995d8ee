package comm

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"weak"

	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/job"
)

// Revocation (ULFM's MPI_Comm_revoke). A rank revokes a communicator for
// all its members: each member's engine fails the operations of the
// communicator's contexts that have not matched, its collectives waiting
// on a node segment or a team end, and every later call but the recovery
// ones (Agree, Shrink, AckFailed, FailedRanks) fails with core.ErrRevoked.
// The word travels as an engine entry naming the communicator's key (its
// point-to-point context); each member passes it on the first time it
// hears it, so it reaches every live member even if the rank that revoked
// dies while telling.

// revocable finds a communicator from the key a peer names: a weak
// pointer, so that a communicator its program dropped is not kept.
var revocable sync.Map // revokeKey → weak.Pointer[Comm]

type revokeKey struct {
	ep  *job.Endpoint
	key uint64
}

// register makes c findable by the revocations of its peers, and revokes
// it at once if a peer revoked it before this rank built it.
func (c *Comm) register() {
	k := revokeKey{c.ep, c.ctx}
	wp := weak.Make(c)
	revocable.Store(k, wp)
	// The entry goes when c does (the key is reused only by the same
	// communicator, so an entry of a later one stays).
	runtime.AddCleanup(c, func(k revokeKey) {
		if v, ok := revocable.Load(k); ok && v.(weak.Pointer[Comm]).Value() == nil {
			revocable.CompareAndDelete(k, v)
		}
	}, k)
	if c.ep.Eng.KnownRevoked(c.ctx) {
		c.revokeHere()
		c.ep.Eng.AnnounceRevoke(c.ctx, c.group)
	}
}

// listenRevocations makes ep's engine hand peers' revocations to the
// communicators they name.
func listenRevocations(ep *job.Endpoint) {
	ep.Eng.SetRevokeHandler(func(key uint64) {
		v, ok := revocable.Load(revokeKey{ep, key})
		if !ok {
			return // not built here yet: register revokes it then
		}
		if c := v.(weak.Pointer[Comm]).Value(); c != nil {
			c.revokeHere()
			ep.Eng.AnnounceRevoke(key, c.group)
		}
	})
}

// Revoke revokes c on every member (commtune.Comm.Revoke). Revoking a
// revoked communicator does nothing.
func (c *Comm) Revoke() error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	if c.ep.Eng.MarkRevoked(c.ctx) {
		c.revokeHere()
		c.ep.Eng.AnnounceRevoke(c.ctx, c.group)
	}
	return nil
}

// Revoked reports whether c is revoked, by this rank or by a peer.
func (c *Comm) Revoked() bool { return c != nil && c.revoked.Load() }

// revokeHere revokes c on this rank: its contexts, its team's and node
// segment's waits, and the communicators its hierarchical calls run on.
func (c *Comm) revokeHere() {
	if c.revoked.Swap(true) {
		return
	}
	c.ep.Eng.RevokeContexts(c.ctx, c.collCtx, mix(c.ctx, rmaSalt))
	if m := c.team.Load(); m != nil {
		m.t.revoke()
	}
	if h := c.hier.Load(); h != nil {
		h.node.revokeHere()
		if h.leaders != nil {
			h.leaders.revokeHere()
		}
	}
	c.mu.Lock()
	tied := c.tied
	c.tied = nil
	c.mu.Unlock()
	for _, wp := range tied {
		if d := wp.Value(); d != nil {
			d.revokeHere()
		}
	}
}

// DupTied is Dup for the library's own use of c (a halo exchange's
// communicator): a revocation of c revokes it too, since to the program
// it is c.
func (c *Comm) DupTied() (*Comm, error) {
	d, err := c.Dup()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.tied = slices.DeleteFunc(c.tied, func(wp weak.Pointer[Comm]) bool { return wp.Value() == nil })
	c.tied = append(c.tied, weak.Make(d))
	c.mu.Unlock()
	if c.revoked.Load() {
		d.revokeHere() // revoked meanwhile: the list was read already
	}
	return d, nil
}

// revokedErr is the error of a call on a revoked communicator.
func (c *Comm) revokedErr() error {
	return fmt.Errorf("commtune: %w", core.ErrRevoked)
}

// checkOpen is where the recovery calls start: a revoked communicator
// takes them, a nil or closed one does not.
func (c *Comm) checkOpen() error {
	if c == nil {
		return errNilComm
	}
	if c.closed.Load() || c.ep.Closed() {
		return core.ErrClosed
	}
	return nil
}

// revoke breaks the team for good with core.ErrRevoked, waking every
// member that waits in a call.
func (t *team) revoke() {
	if t.broken.CompareAndSwap(nil, &teamFailure{fmt.Errorf("commtune: %w", core.ErrRevoked)}) {
		t.wakeAll()
	}
}
