package core

import "github.com/commtune/commtune/internal/driver"

// A vector message is a list of byte slices, segments, whose concatenation
// is the message: a send gathers them, a receive scatters into them, in
// order. On the wire it is a message like any other. These helpers copy
// only where the protocol copies anyway (eager payloads); rendezvous data
// and iovec sends use the segments in place.

// segsLen returns the total length of segs.
func segsLen(segs [][]byte) int {
	n := 0
	for _, s := range segs {
		n += len(s)
	}
	return n
}

// gatherSegs copies segs' concatenation into dst, as much as fits, and
// returns the number of bytes copied.
func gatherSegs(dst []byte, segs [][]byte) int {
	n := 0
	for _, s := range segs {
		if n == len(dst) {
			break
		}
		n += copy(dst[n:], s)
	}
	return n
}

// scatterSegs copies src into segs in order, as much as they hold, and
// returns the number of bytes copied.
func scatterSegs(segs [][]byte, src []byte) int {
	n := 0
	for _, s := range segs {
		if n == len(src) {
			break
		}
		n += copy(s, src[n:])
	}
	return n
}

// subSegs returns the segments covering bytes [off, off+n) of segs'
// concatenation, sliced from segs' own memory, with no empty one. When
// that is all of segs and none is empty, it is segs itself, so the
// common case allocates nothing.
func subSegs(segs [][]byte, off, n int) [][]byte {
	if off == 0 && n >= segsLen(segs) && !hasEmpty(segs) {
		return segs
	}
	return driver.AppendRange(nil, segs, off, n)
}

func hasEmpty(segs [][]byte) bool {
	for _, s := range segs {
		if len(s) == 0 {
			return true
		}
	}
	return false
}

// segCursor finds the segment holding a byte offset. It remembers the last
// one found: rendezvous data arrives mostly in order, so each lookup
// starts where the previous one ended and the whole message costs one
// pass over the segments; an offset behind it starts over from the first.
type segCursor struct {
	idx  int // segment last found
	base int // offset of its first byte in the concatenation
}

// piece returns the part of segs' concatenation that starts at off and
// runs to the end of the segment holding off, at most n bytes; nil when
// off is at or past the end (or n is 0).
func (c *segCursor) piece(segs [][]byte, off, n int) []byte {
	if n <= 0 || off < 0 {
		return nil
	}
	if off < c.base || c.idx >= len(segs) {
		c.idx, c.base = 0, 0
	}
	for c.idx < len(segs) && off >= c.base+len(segs[c.idx]) {
		c.base += len(segs[c.idx])
		c.idx++
	}
	if c.idx == len(segs) {
		return nil
	}
	s := segs[c.idx][off-c.base:]
	return s[:min(len(s), n)]
}
