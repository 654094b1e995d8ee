package rma

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// Header is a target's synchronisation words, in memory every origin that
// reaches the target in place can address (the head of its shared
// mapping, or the heap for goroutine ranks). Its size is a whole cache
// line so that a window's data starting after it is aligned for atomics.
type Header struct {
	// lock: exclusiveBit when held exclusively, else the number of shared
	// holders.
	lock atomic.Uint64
	// acc is the accumulate lock for elements that have no atomic
	// operation of their size: 1 while held.
	acc atomic.Uint32
	_   [HeaderSize - 12]byte
}

// HeaderSize is the bytes a Header takes at the head of a shared mapping.
const HeaderSize = 64

// exclusiveBit marks a lock held exclusively.
const exclusiveBit = 1 << 63

// HeaderAt views the first HeaderSize bytes of mem (a shared mapping's,
// page-aligned) as a Header.
func HeaderAt(mem []byte) *Header {
	if len(mem) < HeaderSize || uintptr(unsafe.Pointer(&mem[0]))%8 != 0 {
		return nil
	}
	return (*Header)(unsafe.Pointer(&mem[0]))
}

// LockKind is a passive-target lock's mode.
type LockKind int

// The lock kinds: MPI_LOCK_SHARED and MPI_LOCK_EXCLUSIVE.
const (
	Shared LockKind = iota + 1
	Exclusive
)

// tryLock takes the lock in mode kind if it is free for it.
func (h *Header) tryLock(kind LockKind) bool {
	v := h.lock.Load()
	if kind == Exclusive {
		return v == 0 && h.lock.CompareAndSwap(0, exclusiveBit)
	}
	return v&exclusiveBit == 0 && h.lock.CompareAndSwap(v, v+1)
}

// unlock releases a lock taken in mode kind.
func (h *Header) unlock(kind LockKind) {
	if kind == Exclusive {
		h.lock.Store(0)
		return
	}
	h.lock.Add(^uint64(0))
}

// lockWait takes the lock, waiting while others hold it: it spins, then
// yields the processor, then sleeps, so a holder on the same processor
// (more ranks than processors) gets to release it.
func (h *Header) lockWait(ctx context.Context, kind LockKind) error {
	var b backoff
	for !h.tryLock(kind) {
		if err := b.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// accLock takes the accumulate lock.
func (h *Header) accLock() {
	var b backoff
	for h.acc.Load() != 0 || !h.acc.CompareAndSwap(0, 1) {
		b.wait(context.Background())
	}
}

// accUnlock releases the accumulate lock.
func (h *Header) accUnlock() { h.acc.Store(0) }

// backoff paces a wait on a word another rank will change: a few hundred
// polls, then yields, then sleeps of growing length (up to 100 µs), so a
// long wait costs little processor time.
type backoff struct{ n int }

func (b *backoff) wait(ctx context.Context) error {
	b.n++
	switch {
	case b.n < 128:
		return nil
	case b.n < 256:
		runtime.Gosched()
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	d := time.Duration(b.n-255) * time.Microsecond
	time.Sleep(min(d, 100*time.Microsecond))
	return nil
}
