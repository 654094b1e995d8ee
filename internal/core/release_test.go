package core

import "testing"

// TestReleaseContexts: closing a context drops the eager messages that
// wait in it, and those that arrive for it later, crediting their bytes
// back; a context where a rendezvous waits for an answer stays.
func TestReleaseContexts(t *testing.T) {
	n := newNet(t, 2, 1, Config{RendezvousThreshold: 1024})
	a, b := n.engines[0], n.engines[1]
	const eagerCtx, rndvCtx = 3, 4
	a.Isend(eagerCtx, 1, 0, make([]byte, 100))
	a.Isend(rndvCtx, 1, 0, make([]byte, 64<<10))
	n.run(nil)
	if got := b.Stats().UnexpectedBytes; got != 100 {
		t.Fatalf("unexpected bytes before: %d", got)
	}
	b.ReleaseContexts(eagerCtx, rndvCtx)
	if got := b.Stats().UnexpectedBytes; got != 0 {
		t.Errorf("unexpected bytes after the release: %d, want 0", got)
	}
	b.mu.Lock()
	_, eagerKept := b.ctxs[eagerCtx]
	_, rndvKept := b.ctxs[rndvCtx]
	b.mu.Unlock()
	if eagerKept || !rndvKept {
		t.Errorf("after the release: eager context kept %t, rendezvous context kept %t", eagerKept, rndvKept)
	}
	late := a.Isend(eagerCtx, 1, 0, make([]byte, 50)) // arrives after the close
	n.run(nil)
	mustDone(t, late)
	b.mu.Lock()
	_, recreated := b.ctxs[eagerCtx]
	owed := b.peers[0].owed
	b.mu.Unlock()
	if recreated || owed != 150 {
		t.Errorf("late message: context recreated %t, bytes owed back %d, want false and 150", recreated, owed)
	}
}
