package rma

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Notice tags on the window's Sync communicator.
const (
	tagPost     = 1 // a target opened its exposure epoch to the origin
	tagComplete = 2 // an origin's access epoch to the target is over
)

// Lock starts a passive-target epoch to target: it returns once the lock
// is held (in place, or granted by the target's agent).
func (w *Window) Lock(ctx context.Context, kind LockKind, target int) error {
	w.mu.Lock()
	err := w.rankLocked("Lock", target)
	if err == nil {
		err = w.ep.lock(target, kind)
	}
	w.mu.Unlock()
	if err != nil {
		return err
	}
	if err := w.acquire(ctx, kind, target); err != nil {
		w.mu.Lock()
		w.ep.unlock(target)
		w.mu.Unlock()
		return err
	}
	return nil
}

func (w *Window) acquire(ctx context.Context, kind LockKind, target int) error {
	defer w.Sync()
	if t := w.target(target); t != nil {
		return t.Header.lockWait(ctx, kind)
	}
	return w.call(ctx, target, request{kind: kLock, lock: kind}, nil)
}

func (w *Window) release(ctx context.Context, kind LockKind, target int) error {
	w.Sync()
	if t := w.target(target); t != nil {
		t.Header.unlock(kind)
		return nil
	}
	err := w.call(ctx, target, request{kind: kUnlock, lock: kind}, nil)
	w.mu.Lock()
	w.outstanding[target] = 0
	w.mu.Unlock()
	return err
}

// Unlock ends the passive-target epoch to target: every operation of the
// epoch is complete at the target when it returns.
func (w *Window) Unlock(ctx context.Context, target int) error {
	w.mu.Lock()
	var kind LockKind
	err := w.rankLocked("Unlock", target)
	if err == nil {
		kind, err = w.ep.unlock(target)
	}
	w.mu.Unlock()
	if err != nil {
		return err
	}
	return w.release(ctx, kind, target)
}

// LockAll starts a passive-target epoch to every rank with a shared lock.
func (w *Window) LockAll(ctx context.Context) error {
	if err := w.live(); err != nil {
		return err
	}
	w.mu.Lock()
	err := w.ep.startLockAll()
	w.mu.Unlock()
	if err != nil {
		return err
	}
	for t := range w.cfg.Sizes {
		if err := w.acquire(ctx, Shared, t); err != nil {
			for u := range t {
				w.release(context.Background(), Shared, u)
			}
			w.mu.Lock()
			w.ep.endLockAll()
			w.mu.Unlock()
			return err
		}
	}
	return nil
}

// UnlockAll ends LockAll's epoch; every operation of it is complete at
// its target when it returns.
func (w *Window) UnlockAll(ctx context.Context) error {
	if err := w.live(); err != nil {
		return err
	}
	w.mu.Lock()
	err := w.ep.endLockAll()
	w.mu.Unlock()
	if err != nil {
		return err
	}
	var errs []error
	for t := range w.cfg.Sizes {
		errs = append(errs, w.release(ctx, Shared, t))
	}
	return errors.Join(errs...)
}

// Flush completes every operation this rank started to target, at the
// target, inside a passive-target epoch.
func (w *Window) Flush(ctx context.Context, target int) error {
	if w.closed.Load() || target < 0 || target >= len(w.cfg.Sizes) || !w.ep.passiveOpen(target) {
		w.mu.Lock()
		err := w.rankLocked("Flush", target)
		if err == nil {
			err = w.ep.passive(target, "Flush")
		}
		w.mu.Unlock()
		if err != nil {
			return err
		}
	}
	if w.target(target) != nil {
		return nil // in place: the origin's own stores did the work
	}
	return w.flush(ctx, target)
}

// flush asks target's agent to confirm every request this rank sent it,
// if any is unconfirmed; targets reached in place need nothing (the
// origin's own stores did the work).
func (w *Window) flush(ctx context.Context, target int) error {
	if err := w.flushLocal(ctx, target); err != nil {
		return err
	}
	w.mu.Lock()
	n := w.outstanding[target]
	w.outstanding[target] = 0
	w.mu.Unlock()
	if n == 0 || w.target(target) != nil {
		return nil
	}
	return w.call(ctx, target, request{kind: kFlush}, nil)
}

// FlushLocal completes every operation this rank started to target
// locally (its data may be reused), inside a passive-target epoch.
func (w *Window) FlushLocal(ctx context.Context, target int) error {
	if err := w.checkRank("FlushLocal", target); err != nil {
		return err
	}
	w.mu.Lock()
	err := w.ep.passive(target, "FlushLocal")
	w.mu.Unlock()
	if err != nil {
		return err
	}
	return w.flushLocal(ctx, target)
}

// FlushLocalAll is FlushLocal of every target.
func (w *Window) FlushLocalAll(ctx context.Context) error {
	if !w.anyLocked() {
		return epochErr("FlushLocalAll outside a passive-target epoch (Lock or LockAll first)")
	}
	var errs []error
	for t := range w.cfg.Sizes {
		errs = append(errs, w.flushLocal(ctx, t))
	}
	return errors.Join(errs...)
}

// flushLocal waits for the request-based sends to target; blocking ones
// are complete when their call returns.
func (w *Window) flushLocal(ctx context.Context, target int) error {
	w.mu.Lock()
	ps := w.sends[target]
	delete(w.sends, target)
	w.mu.Unlock()
	var errs []error
	for _, p := range ps {
		errs = append(errs, p.Wait(ctx))
	}
	return errors.Join(errs...)
}

// FlushAll is Flush of every target.
func (w *Window) FlushAll(ctx context.Context) error {
	if err := w.live(); err != nil {
		return err
	}
	if !w.anyLocked() {
		return epochErr("FlushAll outside a passive-target epoch (Lock or LockAll first)")
	}
	return w.flushAll(ctx)
}

func (w *Window) anyLocked() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ep.lockAll || w.ep.nlocks > 0
}

func (w *Window) flushAll(ctx context.Context) error {
	var errs []error
	for t := range w.cfg.Sizes {
		errs = append(errs, w.flush(ctx, t))
	}
	return errors.Join(errs...)
}

// Fence ends the current fence epoch and starts the next, collectively:
// every operation any rank started before it is complete everywhere when
// it returns.
func (w *Window) Fence(ctx context.Context) error {
	if err := w.live(); err != nil {
		return err
	}
	w.mu.Lock()
	err := w.ep.startFence()
	w.mu.Unlock()
	if err != nil {
		return err
	}
	if err := w.flushAll(ctx); err != nil {
		return err
	}
	w.Sync()
	err = w.cfg.Coll.Barrier(ctx)
	w.Sync()
	return err
}

// Post starts an exposure epoch to origins (ranks of the window): each
// may access this rank's window once its Start returns.
func (w *Window) Post(ctx context.Context, origins []int) error {
	if err := w.checkRanks("Post", origins); err != nil {
		return err
	}
	w.mu.Lock()
	err := w.ep.post(origins)
	w.mu.Unlock()
	if err != nil {
		return err
	}
	w.Sync()
	for _, o := range origins {
		if err := w.cfg.Sync.Send(ctx, nil, o, tagPost); err != nil {
			return err
		}
	}
	return nil
}

// Start starts an access epoch to targets, once each has posted one to
// this rank.
func (w *Window) Start(ctx context.Context, targets []int) error {
	if err := w.checkRanks("Start", targets); err != nil {
		return err
	}
	w.mu.Lock()
	err := w.ep.start(targets)
	w.mu.Unlock()
	if err != nil {
		return err
	}
	for _, t := range targets {
		if _, err := w.cfg.Sync.Recv(ctx, nil, t, tagPost); err != nil {
			w.mu.Lock()
			w.ep.complete()
			w.mu.Unlock()
			return err
		}
	}
	return nil
}

// Complete ends Start's access epoch: its operations are complete at
// their targets, and each target's Wait may return.
func (w *Window) Complete(ctx context.Context) error {
	if err := w.live(); err != nil {
		return err
	}
	w.mu.Lock()
	targets, err := w.ep.complete()
	w.mu.Unlock()
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range sortedKeys(targets) {
		errs = append(errs, w.flush(ctx, t))
		errs = append(errs, w.cfg.Sync.Send(ctx, nil, t, tagComplete))
	}
	return errors.Join(errs...)
}

// WaitExposure ends Post's exposure epoch once every origin of it has
// called Complete: their operations are all in this rank's window.
func (w *Window) WaitExposure(ctx context.Context) error {
	if err := w.live(); err != nil {
		return err
	}
	w.mu.Lock()
	origins, err := w.ep.wait()
	w.mu.Unlock()
	if err != nil {
		return err
	}
	for _, o := range sortedKeys(origins) {
		if _, err := w.cfg.Sync.Recv(ctx, nil, o, tagComplete); err != nil {
			return err
		}
	}
	w.Sync()
	return nil
}

func sortedKeys(s map[int]bool) []int {
	ks := make([]int, 0, len(s))
	for k := range s {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Free ends the window, collectively: no epoch may be open. The memory is
// the caller's to release once it returns.
func (w *Window) Free(ctx context.Context) error {
	w.mu.Lock()
	if w.closed.Load() {
		w.mu.Unlock()
		return ErrFreed
	}
	err := w.ep.free()
	if err == nil {
		w.closed.Store(true)
	}
	w.mu.Unlock()
	if err != nil {
		return err
	}
	w.Sync()
	err = w.cfg.Coll.Barrier(ctx)
	if w.agent != nil {
		w.agent.stop()
	}
	w.Sync()
	return err
}

func (w *Window) live() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed.Load() {
		return ErrFreed
	}
	return nil
}

func (w *Window) checkRank(call string, r int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rankLocked(call, r)
}

// rankLocked checks, under w.mu, that the window is live and r a rank of it.
func (w *Window) rankLocked(call string, r int) error {
	if w.closed.Load() {
		return ErrFreed
	}
	if r < 0 || r >= len(w.cfg.Sizes) {
		return fmt.Errorf("rma: %s: rank %d outside a window of %d ranks", call, r, len(w.cfg.Sizes))
	}
	return nil
}

func (w *Window) checkRanks(call string, rs []int) error {
	seen := map[int]bool{}
	for _, r := range rs {
		if err := w.checkRank(call, r); err != nil {
			return err
		}
		if seen[r] {
			return fmt.Errorf("rma: %s: rank %d named twice", call, r)
		}
		seen[r] = true
	}
	return w.live()
}
