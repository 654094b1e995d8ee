package core

import (
	"math/bits"
	"sync"
)

// Pooled byte buffers by power-of-two size class, for eager-copy packets and
// unexpected payloads: a flood of small messages then recycles memory rather
// than churning the garbage collector.
const (
	minClassShift = 6  // 64 B
	maxClassShift = 20 // 1 MiB; larger buffers are not pooled
)

var classes [maxClassShift - minClassShift + 1]sync.Pool

func classOf(n int) int {
	if n <= 1<<minClassShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minClassShift
}

// getBuf returns a buffer of length n.
func getBuf(n int) *[]byte {
	c := classOf(n)
	if c >= len(classes) {
		b := make([]byte, n)
		return &b
	}
	if v := classes[c].Get(); v != nil {
		b := v.(*[]byte)
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<(c+minClassShift))
	return &b
}

// putBuf recycles a buffer from getBuf.
func putBuf(b *[]byte) {
	if b == nil {
		return
	}
	c := classOf(cap(*b))
	if c >= len(classes) || cap(*b) != 1<<(c+minClassShift) {
		return
	}
	classes[c].Put(b)
}
