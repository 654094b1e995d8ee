package comm

import "sync/atomic"

// knownBool is a fact about a communicator computed on first use and kept:
// what it is made of (its members and how they reach each other) does not
// change. Concurrent first uses may each compute it, alike.
type knownBool struct {
	v atomic.Int32 // 0 not known yet, 1 true, 2 false
}

// get returns the fact, computing it with compute the first time.
func (k *knownBool) get(compute func() bool) bool {
	switch k.v.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	b := compute()
	k.set(b)
	return b
}

// set fixes the fact.
func (k *knownBool) set(b bool) {
	if b {
		k.v.Store(1)
	} else {
		k.v.Store(2)
	}
}
