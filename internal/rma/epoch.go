package rma

import (
	"errors"
	"fmt"
	"sync/atomic"
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
	fence   bool         // a Fence opened an epoch to every target
	lockAll bool         // LockAll: a shared lock on every target
	locks   []LockKind   // Lock: the lock held on each target (0: none)
	nlocks  int          // targets locked
	started map[int]bool // Start: the targets of the access epoch
	posted  map[int]bool // Post: the origins of the exposure epoch

	// Mirrors of the state above for the checks every operation makes
	// (open, passiveOpen), read with no lock: written, under the window's
	// lock, by each change.
	all     atomic.Bool     // fence or lockAll
	allLock atomic.Bool     // lockAll
	per     []atomic.Uint32 // by target: openLocked, openStarted
}

// The bits of epochs.per.
const (
	openLocked  = 1
	openStarted = 2
)

// newEpochs returns the state of a window of n ranks, no epoch open.
func newEpochs(n int) *epochs {
	return &epochs{locks: make([]LockKind, n), per: make([]atomic.Uint32, n)}
}

// mirror publishes target's part of the state, and the whole window's.
func (e *epochs) mirror(targets ...int) {
	// Stores only where the value changes: an atomic store costs a
	// locked instruction, and Lock and Unlock change one word.
	if all := e.fence || e.lockAll; e.all.Load() != all {
		e.all.Store(all)
	}
	if e.allLock.Load() != e.lockAll {
		e.allLock.Store(e.lockAll)
	}
	for _, t := range targets {
		if t < 0 || t >= len(e.per) {
			continue
		}
		var v uint32
		if e.locks[t] != 0 {
			v |= openLocked
		}
		if e.started != nil && e.started[t] {
			v |= openStarted
		}
		e.per[t].Store(v)
	}
}

// open reports, with no lock, whether target may be accessed now (access
// says why not).
func (e *epochs) open(target int) bool {
	return e.all.Load() || e.per[target].Load() != 0
}

// passiveOpen reports, with no lock, whether target is in a passive-target
// epoch (passive says why not).
func (e *epochs) passiveOpen(target int) bool {
	return e.allLock.Load() || e.per[target].Load()&openLocked != 0
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
	e.locks[target] = kind
	e.nlocks++
	e.mirror(target)
	return nil
}

func (e *epochs) unlock(target int) (LockKind, error) {
	kind := e.locks[target]
	if kind == 0 {
		return 0, epochErr("Unlock of rank %d, which this rank has not locked", target)
	}
	e.locks[target] = 0
	e.nlocks--
	e.mirror(target)
	return kind, nil
}

func (e *epochs) startLockAll() error {
	if e.lockAll {
		return epochErr("LockAll inside LockAll")
	}
	if e.nlocks > 0 {
		return epochErr("LockAll while %d ranks are locked", e.nlocks)
	}
	e.lockAll = true
	e.mirror()
	return nil
}

func (e *epochs) endLockAll() error {
	if !e.lockAll {
		return epochErr("UnlockAll without LockAll")
	}
	e.lockAll = false
	e.mirror()
	return nil
}

// startFence checks that a Fence may be called: no other epoch is open.
func (e *epochs) startFence() error {
	if e.lockAll || e.nlocks > 0 {
		return epochErr("Fence inside a passive-target epoch")
	}
	if e.started != nil || e.posted != nil {
		return epochErr("Fence inside a post-start-complete-wait epoch")
	}
	e.fence = true
	e.mirror()
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
	if e.lockAll || e.nlocks > 0 {
		return epochErr("Start inside a passive-target epoch")
	}
	e.fence = false
	e.started = setOf(targets)
	e.mirror(targets...)
	return nil
}

func (e *epochs) complete() (map[int]bool, error) {
	if e.started == nil {
		return nil, epochErr("Complete without Start")
	}
	s := e.started
	e.started = nil
	e.mirror(sortedKeys(s)...)
	return s, nil
}

func (e *epochs) post(origins []int) error {
	if e.posted != nil {
		return epochErr("Post inside an exposure epoch")
	}
	e.fence = false
	e.posted = setOf(origins)
	e.mirror()
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
	case e.lockAll || e.nlocks > 0:
		return epochErr("Free inside a passive-target epoch (Unlock first)")
	case e.started != nil:
		return epochErr("Free inside an access epoch (Complete first)")
	case e.posted != nil:
		return epochErr("Free inside an exposure epoch (Wait first)")
	}
	return nil
}
