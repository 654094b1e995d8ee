package rma

import (
	"errors"
	"fmt"
)

// ErrEpoch is what an operation or synchronisation out of its place in
// MPI's epochs fails with: an access to a target outside any access epoch
// to it, a lock taken twice, an unlock of no lock, a Complete without a
// Start …; nothing is written.
var ErrEpoch = errors.New("rma: synchronisation error")

// epochs is an origin's view of its access and exposure epochs: which
// targets it may access now, and what it must close. It does no I/O: the
// window consults it before each call, under its lock.
type epochs struct {
	fence   bool             // a Fence opened an epoch to every target
	lockAll bool             // LockAll: a shared lock on every target
	locks   map[int]LockKind // Lock: the lock held on each target
	started map[int]bool     // Start: the targets of the access epoch
	posted  map[int]bool     // Post: the origins of the exposure epoch
}

func epochErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrEpoch}, args...)...)
}

// access checks that target may be accessed now.
func (e *epochs) access(target int, call string) error {
	if e.fence || e.lockAll || e.locks[target] != 0 || e.started[target] {
		return nil
	}
	return epochErr("%s to rank %d outside an access epoch (Fence, Lock, LockAll or Start first)", call, target)
}

// passive checks that target is in a passive-target epoch (Flush's).
func (e *epochs) passive(target int, call string) error {
	if e.lockAll || e.locks[target] != 0 {
		return nil
	}
	return epochErr("%s of rank %d outside a passive-target epoch (Lock or LockAll first)", call, target)
}

func (e *epochs) lock(target int, kind LockKind) error {
	switch {
	case kind != Shared && kind != Exclusive:
		return fmt.Errorf("rma: lock kind %d: want Shared or Exclusive", kind)
	case e.lockAll:
		return epochErr("Lock of rank %d inside LockAll", target)
	case e.locks[target] != 0:
		return epochErr("rank %d is locked already", target)
	}
	if e.locks == nil {
		e.locks = map[int]LockKind{}
	}
	e.locks[target] = kind
	return nil
}

func (e *epochs) unlock(target int) (LockKind, error) {
	kind := e.locks[target]
	if kind == 0 {
		return 0, epochErr("Unlock of rank %d, which this rank has not locked", target)
	}
	delete(e.locks, target)
	return kind, nil
}

func (e *epochs) startLockAll() error {
	if e.lockAll {
		return epochErr("LockAll inside LockAll")
	}
	if len(e.locks) > 0 {
		return epochErr("LockAll while %d ranks are locked", len(e.locks))
	}
	e.lockAll = true
	return nil
}

func (e *epochs) endLockAll() error {
	if !e.lockAll {
		return epochErr("UnlockAll without LockAll")
	}
	e.lockAll = false
	return nil
}

// startFence checks that a Fence may be called: no other epoch is open.
func (e *epochs) startFence() error {
	if e.lockAll || len(e.locks) > 0 {
		return epochErr("Fence inside a passive-target epoch")
	}
	if e.started != nil || e.posted != nil {
		return epochErr("Fence inside a post-start-complete-wait epoch")
	}
	e.fence = true
	return nil
}

func setOf(ranks []int) map[int]bool {
	s := make(map[int]bool, len(ranks))
	for _, r := range ranks {
		s[r] = true
	}
	return s
}

func (e *epochs) start(targets []int) error {
	if e.started != nil {
		return epochErr("Start inside an access epoch of Start")
	}
	if e.lockAll || len(e.locks) > 0 {
		return epochErr("Start inside a passive-target epoch")
	}
	e.fence = false
	e.started = setOf(targets)
	return nil
}

func (e *epochs) complete() (map[int]bool, error) {
	if e.started == nil {
		return nil, epochErr("Complete without Start")
	}
	s := e.started
	e.started = nil
	return s, nil
}

func (e *epochs) post(origins []int) error {
	if e.posted != nil {
		return epochErr("Post inside an exposure epoch")
	}
	e.fence = false
	e.posted = setOf(origins)
	return nil
}

func (e *epochs) wait() (map[int]bool, error) {
	if e.posted == nil {
		return nil, epochErr("Wait without Post")
	}
	s := e.posted
	e.posted = nil
	return s, nil
}

// free checks that no epoch is left open.
func (e *epochs) free() error {
	switch {
	case e.lockAll || len(e.locks) > 0:
		return epochErr("Free inside a passive-target epoch (Unlock first)")
	case e.started != nil:
		return epochErr("Free inside an access epoch (Complete first)")
	case e.posted != nil:
		return epochErr("Free inside an exposure epoch (Wait first)")
	}
	return nil
}
