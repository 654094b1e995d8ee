package bench

import "time"

// coldBytes is the memory the cold copy baseline cycles through: twice
// this machine class's 32 MiB last-level cache, so every copy starts from
// memory.
const coldBytes = 64 << 20

// copier times plain single-thread copy() of a message in one process: the
// baseline a shared-memory transport is measured against.
type copier struct {
	a, b  []byte
	arena []byte
	next  int
}

func newCopier(maxSize int) *copier {
	c := &copier{a: make([]byte, maxSize), b: make([]byte, maxSize), arena: make([]byte, max(coldBytes, 4*maxSize))}
	for i := range c.a {
		c.a[i] = byte(i)
	}
	for i := 0; i < len(c.arena); i += 4096 {
		c.arena[i] = 1 // fault the pages in now, not while timing
	}
	return c
}

// hot copies size bytes between the same two buffers n times.
func (c *copier) hot(size, n int, ds []time.Duration) []time.Duration {
	src, dst := c.a[:size], c.b[:size]
	for i := 0; i < n; i++ {
		t0 := time.Now()
		copy(dst, src)
		ds = append(ds, time.Since(t0))
		src, dst = dst, src
	}
	return ds
}

// cold copies size bytes between successive slots of the arena, so that
// source and destination are long out of the cache.
func (c *copier) cold(size, n int, ds []time.Duration) []time.Duration {
	slots := len(c.arena) / size
	c.next %= slots // the previous size had more, smaller slots
	for i := 0; i < n; i++ {
		src := c.arena[c.next*size:][:size]
		c.next = (c.next + 1) % slots
		dst := c.arena[c.next*size:][:size]
		c.next = (c.next + 1) % slots
		t0 := time.Now()
		copy(dst, src)
		ds = append(ds, time.Since(t0))
	}
	return ds
}
