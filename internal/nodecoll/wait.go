package nodecoll

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// Waiter is how a rank waits for a peer's word: it polls, yielding the
// processor to the process's other goroutines now and then; after Spin it
// sleeps on the word (a futex where there is one), Nap at a time, and asks
// Check between naps. With Yield (more ranks than processors) every empty
// poll gives the processor away at once: the rank waited for may need it.
type Waiter struct {
	Spin  time.Duration // poll this long before sleeping
	Nap   time.Duration // the longest sleep before looking again (> 0)
	Yield bool          // give the processor away after every empty poll
	// Gosched gives the processor to another goroutine after every
	// empty poll: goroutine ranks outnumber the process's processors.
	Gosched bool
	// Check is asked every checkEvery polls and after every nap, with
	// the rank waited for and how long this wait has lasted: an error
	// ends the wait with it (a context ended, a peer lost, a peer that
	// says the call is not the one this rank makes).
	Check func(rank int, waited time.Duration) error
	// Leaving, when set, is told why this rank's calls stop, before the
	// peers can see that they did (Group.Abort): where the reason may
	// reach them by other means first.
	Leaving func(error)
	// Describe names a signature in errors.
	Describe func(Sig) string
	// Bell, if set, is how a waiter sleeps and an owner wakes it; nil:
	// a futex on the word, for parts processes share.
	Bell Bell
}

// A Bell puts waiters for a part's owner to sleep and wakes them when
// it publishes. Goroutine ranks need one that parks goroutines: a futex
// holds a thread per sleeper.
type Bell interface {
	// Sleep returns once ready reports true, Ring(rank) is called, or d
	// passes (early returns are allowed: callers look again).
	Sleep(rank int, ready func() bool, d time.Duration)
	// Ring wakes every sleeper on rank's part.
	Ring(rank int)
}

// ChanBells is a Bell for goroutine ranks: per part, a channel closed
// (and replaced) at each ring that has sleepers.
type ChanBells struct {
	chans []atomic.Pointer[chan struct{}]
}

// NewChanBells returns the bells of n parts.
func NewChanBells(n int) *ChanBells {
	b := &ChanBells{chans: make([]atomic.Pointer[chan struct{}], n)}
	for i := range b.chans {
		ch := make(chan struct{})
		b.chans[i].Store(&ch)
	}
	return b
}

// Sleep parks until rank rings, ready holds, or d passes. The channel is
// taken before ready is asked: a ring after that closes it.
func (b *ChanBells) Sleep(rank int, ready func() bool, d time.Duration) {
	ch := *b.chans[rank].Load()
	if ready() {
		return
	}
	t := time.NewTimer(d)
	select {
	case <-ch:
	case <-t.C:
	}
	t.Stop()
}

// Ring wakes rank's sleepers.
func (b *ChanBells) Ring(rank int) {
	ch := make(chan struct{})
	close(*b.chans[rank].Swap(&ch))
}

// checkEvery is how many polls pass between two looks at the clock and
// Check: most waits of a small call end within a few polls, and reading
// the clock costs as much as a poll.
const checkEvery = 256

// goschedEvery is how many empty polls pass between two runtime.Gosched
// calls, which let this process's other goroutines (a rail's, the
// application's) run.
const goschedEvery = 64

func (w *Waiter) describe(s Sig) string {
	if w.Describe != nil {
		return w.Describe(s)
	}
	return fmt.Sprintf("signature %#x/%#x", s[0], s[1])
}

// wait returns once rank r's sequence word of call s reads s or more.
func (w *Waiter) wait(g *Group, r int, s uint64) error {
	word := g.seqWord(r, s)
	if v := word.Load(); v >= s {
		return w.seen(r, v)
	}
	var start time.Time // of the wait, from its first look at the clock
	for i := 1; ; i++ {
		if v := word.Load(); v >= s {
			return w.seen(r, v)
		}
		if w.Yield {
			osYield()
		} else if w.Gosched || i%goschedEvery == 0 {
			runtime.Gosched()
		}
		if i%checkEvery != 0 && !w.Yield {
			continue
		}
		now := time.Now()
		if start.IsZero() {
			start = now
		}
		if err := w.check(r, word, s, now.Sub(start)); err != nil {
			return err
		}
		if now.Sub(start) > w.Spin {
			if err := w.sleep(g, r, word, s, start); err != nil {
				return err
			}
		}
	}
}

// check asks Check whether the wait for word to read s must end; a word
// that came meanwhile ends it well all the same (a peer that gave and then
// closed).
func (w *Waiter) check(r int, word *atomic.Uint64, s uint64, waited time.Duration) error {
	if w.Check == nil {
		return nil
	}
	err := w.Check(r, waited)
	if err != nil && word.Load() >= s {
		return w.seen(r, word.Load())
	}
	return err
}

// seen is the end of a wait whose word read v.
func (w *Waiter) seen(r int, v uint64) error {
	if v&abortBit != 0 {
		return fmt.Errorf("%w (rank %d)", ErrAborted, r)
	}
	return nil
}

// sleep sleeps on word until it reads s or more, a nap passes, or Check
// fails.
func (w *Waiter) sleep(g *Group, r int, word *atomic.Uint64, s uint64, start time.Time) error {
	sl := g.sleepers(r)
	sl.Add(1)
	defer sl.Add(^uint32(0))
	for {
		v := word.Load()
		if v >= s {
			return nil // the caller's next look reads it
		}
		if w.Bell != nil {
			w.Bell.Sleep(r, func() bool { return word.Load() >= s }, w.Nap)
		} else {
			futexSleep(low32(word), uint32(v), w.Nap)
		}
		if err := w.check(r, word, s, time.Since(start)); err != nil {
			return err
		}
	}
}

// low32 returns the low half of a word (little-endian): what a futex
// sleeps on. Every new call's number changes it.
func low32(w *atomic.Uint64) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(w)) }

// wake wakes every sleeper on rank's word w.
func (w *Waiter) wake(rank int, word *atomic.Uint64) {
	if w.Bell != nil {
		w.Bell.Ring(rank)
		return
	}
	futexWakeAll(low32(word))
}
