package shm

import "fmt"

// fragSlots is a process's private account of its own fragment pool
// (fifo.go): which slots are free, and which are out with a receiver. A
// receiver gives a fragment back by posting it to its owner's inbound
// queue, as Open MPI's vader does (the fragment flagged complete there);
// the owner takes back only a slot it gave out, once, so a peer that
// returns a slot twice, or one it never got, cannot make two messages
// share a slot. With every slot out, a sender waits for returns: the
// pool's size bounds what a process has in flight, whatever the number of
// peers.
type fragSlots struct {
	free []int32 // last in, first out: the slot used last is warmest
	out  []bool  // by slot: given to a receiver, not yet back
}

func newFragSlots(n int) *fragSlots {
	a := &fragSlots{free: make([]int32, n), out: make([]bool, n)}
	for i := range a.free {
		a.free[i] = int32(n - 1 - i) // slot 0 first
	}
	return a
}

// take returns a free slot, now out, or false when every slot is out.
func (a *fragSlots) take() (int, bool) {
	n := len(a.free)
	if n == 0 {
		return 0, false
	}
	s := int(a.free[n-1])
	a.free = a.free[:n-1]
	a.out[s] = true
	return s, true
}

// give takes slot back from a receiver. A slot that is not out is an
// error of the peer that returned it, and changes nothing.
func (a *fragSlots) give(slot int) error {
	if slot < 0 || slot >= len(a.out) || !a.out[slot] {
		return fmt.Errorf("%w: fragment %d returned but not out", errCorruptFifo, slot)
	}
	a.out[slot] = false
	a.free = append(a.free, int32(slot))
	return nil
}

// outstanding returns how many slots are out.
func (a *fragSlots) outstanding() int { return len(a.out) - len(a.free) }

// grow adds n free slots after the last (the owner gave them memory).
func (a *fragSlots) grow(n int) {
	base := len(a.out)
	a.out = append(a.out, make([]bool, n)...)
	for i := n - 1; i >= 0; i-- {
		a.free = append(a.free, int32(base+i))
	}
}

// size returns how many slots the pool has.
func (a *fragSlots) size() int { return len(a.out) }
