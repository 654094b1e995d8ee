package core

// Revocation (the ULFM model's MPI_Comm_revoke): a rank that revokes a
// communicator fails every operation of it that has not matched, here and
// at every other member, now and later. The engine knows matching
// contexts, not communicators: the caller names a communicator by a key
// (its point-to-point context) and lists its contexts. A revocation
// travels as a kindRevoke entry; every rank that learns of it first tells
// the others too, so it reaches every live member even when the rank that
// revoked dies while telling them.

// SetRevokeHandler makes f what learning from a peer that the
// communicator key is revoked calls (once per key, after the engine's
// lock): the communicator layer revokes that communicator's contexts
// there and passes the word on. Set it before traffic starts.
func (e *Engine) SetRevokeHandler(f func(key uint64)) {
	e.mu.Lock()
	e.onRevoke = f
	e.mu.Unlock()
}

// MarkRevoked records that communicator key is revoked and reports
// whether it was not known to be already: only the first report passes
// the word on.
func (e *Engine) MarkRevoked(key uint64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.markRevokedLocked(key)
}

// KnownRevoked reports whether communicator key is known to be revoked:
// a communicator a rank builds after its peers revoked it starts revoked.
func (e *Engine) KnownRevoked(key uint64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.revokedKeys[key]
	return ok
}

func (e *Engine) markRevokedLocked(key uint64) bool {
	if _, ok := e.revokedKeys[key]; ok {
		return false
	}
	if e.revokedKeys == nil {
		e.revokedKeys = make(map[uint64]struct{})
	}
	e.revokedKeys[key] = struct{}{}
	return true
}

// revokedByPeer hands a peer's revocation of key to the handler.
func (e *Engine) revokedByPeer(key uint64) {
	e.mu.Lock()
	f := e.onRevoke
	e.mu.Unlock()
	if f != nil {
		f(key)
	}
}

// RevokeContexts fails, with ErrRevoked, every operation of the contexts
// ctxs that has not matched — posted receives, and rendezvous sends whose
// receiver has not answered (withdrawn as a Cancel does) — and every later
// one. Transfers that matched finish: both ends are alive and the data is
// on its way. Messages that arrive for a revoked context stay unmatched.
func (e *Engine) RevokeContexts(ctxs ...uint64) {
	var out outbox
	e.mu.Lock()
	revoked := make(map[uint64]bool, len(ctxs))
	for _, id := range ctxs {
		c := e.ctxLocked(id)
		c.revoked = true
		revoked[id] = true
		for r := c.postedHead; r != nil; {
			next := r.next
			c.unpost(r)
			r.step(evCancel, Status{}, ErrRevoked)
			r = next
		}
	}
	for _, r := range e.regions {
		// A region exposed to a put no byte of which has come (a halo
		// exchange's): withdrawn as a Cancel does, scratch memory for a
		// put already on its way.
		if r.state == stExposed && revoked[r.ctxID] {
			r.step(evCancel, Status{}, ErrRevoked)
		}
	}
	for id, r := range e.sends {
		if !revoked[r.ctxID] {
			continue
		}
		switch r.state {
		case stRTS:
			delete(e.sends, id)
			r.step(evCancel, Status{}, ErrRevoked)
			c := newCtrl()
			putCancel(c.buf[:], r.id)
			c.buf[1] = flagRevoked
			c.pkt.Head = c.buf[:cancelLen]
			out.add(r.peer, c)
		case stPullRTS:
			// The receiver may be reading the buffer: ask it to
			// withdraw; the send ends on its answer.
			r.revoked = true
			r.move(evCancel)
			c := newCtrl()
			putWithdraw(c.buf[:], r.ctxID, r.seq, r.id)
			c.buf[1] = flagRevoked
			c.pkt.Head = c.buf[:withdrawLen]
			out.add(r.peer, c)
		}
	}
	e.wakeProbesLocked()
	e.mu.Unlock()
	out.flush(e)
}

// AnnounceRevoke tells peers (world ranks; this one and lost ones are
// skipped) that communicator key is revoked.
func (e *Engine) AnnounceRevoke(key uint64, peers []int) {
	for _, p := range peers {
		e.mu.Lock()
		skip := p == e.rank || p < 0 || p >= e.size || e.peers[p].lost != nil || e.closed != nil
		e.mu.Unlock()
		if skip {
			continue
		}
		c := newCtrl()
		putRevoke(c.buf[:], key)
		c.pkt.Head = c.buf[:revokeLen]
		e.sched.Submit(p, &c.pkt)
	}
}
