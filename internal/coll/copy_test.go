package coll

import (
	"bytes"
	"testing"
)

// TestCopyCached copies as copy does, whatever the size against the chunk.
func TestCopyCached(t *testing.T) {
	for _, tc := range []struct{ dst, src int }{
		{0, 0}, {1, 1}, {cachedCopyChunk - 1, cachedCopyChunk - 1}, {cachedCopyChunk, cachedCopyChunk},
		{cachedCopyChunk + 1, cachedCopyChunk + 1}, {3*cachedCopyChunk + 5, 3*cachedCopyChunk + 5},
		{cachedCopyChunk + 7, 3 * cachedCopyChunk}, {3 * cachedCopyChunk, cachedCopyChunk + 7},
	} {
		src := make([]byte, tc.src)
		for i := range src {
			src[i] = byte(i*31 + i>>9)
		}
		got, want := make([]byte, tc.dst), make([]byte, tc.dst)
		if n, m := copyCached(got, src), copy(want, src); n != m || !bytes.Equal(got, want) {
			t.Errorf("dst %d, src %d: copied %d (copy: %d), bytes equal %v", tc.dst, tc.src, n, m, bytes.Equal(got, want))
		}
	}
}
