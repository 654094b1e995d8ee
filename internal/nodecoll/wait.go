package nodecoll

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/commtune/commtune/internal/futex"
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
	// Sleep returns once word reads s or more, a ring comes, or d passes
	// (early returns are allowed: callers look again); me is the
	// sleeping rank.
	Sleep(me int, word *atomic.Uint64, s uint64, d time.Duration)
	// Ring wakes the sleepers, after a publication by rank.
	Ring(rank int)
}

// ChanBells is a Bell for goroutine ranks: each rank parks on a channel of
// its own, which a ring sends to when the rank says it sleeps. Nothing is
// allocated per sleep.
type ChanBells struct {
	wake   []chan struct{}
	parked []atomic.Bool
	timers []*time.Timer // each rank's, used by it alone
}

// NewChanBells returns the bells of n ranks.
func NewChanBells(n int) *ChanBells {
	b := &ChanBells{wake: make([]chan struct{}, n), parked: make([]atomic.Bool, n), timers: make([]*time.Timer, n)}
	for i := range b.wake {
		b.wake[i] = make(chan struct{}, 1)
		b.timers[i] = time.NewTimer(time.Hour)
		b.timers[i].Stop()
	}
	return b
}

// Sleep parks rank me until a ring, word reading s, or d. It says it
// sleeps before it looks at word: a ring after that look reaches it.
func (b *ChanBells) Sleep(me int, word *atomic.Uint64, s uint64, d time.Duration) {
	b.parked[me].Store(true)
	defer b.parked[me].Store(false)
	if word.Load() >= s {
		return
	}
	t := b.timers[me]
	t.Reset(d)
	select {
	case <-b.wake[me]:
	case <-t.C:
	}
	t.Stop()
}

// Ring wakes every parked rank (a ring is rare: only once a waiter has
// spun its time out).
func (b *ChanBells) Ring(int) {
	for i := range b.parked {
		if b.parked[i].Load() {
			select {
			case b.wake[i] <- struct{}{}:
			default:
			}
		}
	}
}

// checkEvery is how many polls pass between two looks at the clock and
// Check: most waits of a small call end within a few polls, and reading
// the clock costs as much as a poll. A waiter that gives the processor
// away at every poll looks more often (gosChecks, or every poll with
// sched_yield): a poll then lasts as long as the others run.
const checkEvery = 256

// gosChecks is how many polls pass between two looks at the clock for a
// waiter that yields to the process's goroutines at every poll: a poll
// then lasts as long as they run, but each look costs CPU they need.
const gosChecks = 8

// yieldGosched is how many yields to the machine's other threads pass
// between two runtime.Gosched calls for the process's other goroutines:
// futex.Yield keeps the P through the system call.
const yieldGosched = 4

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
		return w.seen(g, r, v, s)
	}
	var start time.Time // of the wait, from its first look at the clock
	for i := 1; ; i++ {
		if v := word.Load(); v >= s {
			return w.seen(g, r, v, s)
		}
		if w.Yield {
			futex.Yield()
			if i%yieldGosched == 0 {
				runtime.Gosched() // the yield holds the P: the process's other goroutines run here
			}
		} else if w.Gosched || i%goschedEvery == 0 {
			runtime.Gosched()
		}
		if i%checkEvery != 0 && !w.Yield && (!w.Gosched || i%gosChecks != 0) {
			continue
		}
		now := time.Now()
		if start.IsZero() {
			start = now
		}
		if err := w.check(g, r, word, s, now.Sub(start)); err != nil {
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
func (w *Waiter) check(g *Group, r int, word *atomic.Uint64, s uint64, waited time.Duration) error {
	if w.Check == nil {
		return nil
	}
	err := w.Check(r, waited)
	if err != nil && word.Load() >= s {
		return w.seen(g, r, word.Load(), s)
	}
	return err
}

// seen is the end of a wait for call s whose word read v. A peer that
// left the calls (abandon mark) fails every call from the one it left in
// on; a call before that one, which it published and so finished, stands:
// a rank still in a call the ranks agreed on finishes it, and meets the
// abandon in the call the peer left.
func (w *Waiter) seen(g *Group, r int, v, s uint64) error {
	if v&abortBit != 0 && (v&^abortBit < s || s >= g.abortedAt(r).Load()) {
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
			w.Bell.Sleep(g.rank, word, s, w.Nap)
		} else {
			futex.Sleep(low32(word), uint32(v), w.Nap)
		}
		if err := w.check(g, r, word, s, time.Since(start)); err != nil {
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
	futex.WakeAll(low32(word))
}
