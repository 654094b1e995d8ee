package memcopy

import "unsafe"

const (
	// blockSize is what one iteration of a vector kernel moves; the bytes
	// after the last whole block go through copy().
	blockSize = 256

	// ntMinLen is the length below which NT is plain copy(): a copy this
	// small is a handful of cache lines, and splitting it into head, body
	// and tail costs more than any pollution it avoids.
	ntMinLen = 4 * blockSize

	// chunkSize bounds one assembly call. Assembly functions are not
	// asynchronously preemptible, so a 64 MiB copy in one call would hold
	// off a GC stop-the-world for milliseconds; at ~10 GB/s a 1 MiB chunk
	// takes ~100 µs and the loop between chunks is a preemption point.
	chunkSize = 1 << 20
)

// NT copies min(len(dst), len(src)) bytes from src to dst and returns that
// number, like copy, but writes the bulk with non-temporal (streaming)
// stores that bypass the cache: writing dst neither evicts the caller's
// working set nor reads dst into the cache before overwriting it. Reading
// src still goes through the cache, so NT halves a copy's pollution rather
// than removing it (measured in the package documentation). It is the
// CPU-only stand-in for the I/OAT DMA offload of seed 004 §3.2.
//
// The destination is aligned to 64 bytes with ordinary stores, whole
// 256-byte blocks are streamed, and the remainder is again copied with
// ordinary stores; src may have any alignment. When NT returns all stores
// are globally visible (SFENCE), so the caller may publish the data with an
// ordinary or atomic store.
//
// dst and src should not overlap: NT detects an overlap and then falls back
// to copy(), which has memmove semantics, so the result is still correct
// but cached. Copies shorter than 1 KiB, and any copy on a CPU without AVX2
// or on a non-amd64 architecture, are plain copy().
//
// The streaming stores are made in assembly and are not seen by the race
// detector.
func NT(dst, src []byte) int {
	return ntWith(defaultKernel, dst, src)
}

// ntWith is NT with an explicit kernel, so tests and benchmarks can compare
// kernels on the same machine.
func ntWith(k kernel, dst, src []byte) int {
	n := min(len(dst), len(src))
	if n < ntMinLen || k == kernelGeneric || overlap(dst[:n], src[:n]) {
		return copy(dst, src)
	}
	d := unsafe.Pointer(unsafe.SliceData(dst))
	s := unsafe.Pointer(unsafe.SliceData(src))

	// Ordinary stores up to the first 64-byte boundary of dst, so that the
	// kernel writes only whole, aligned lines: a line written partially by
	// streaming stores leaves its write-combining buffer half full, and the
	// CPU flushes it as several partial writes (Intel optimization manual,
	// "Write Combining").
	head := int(-uintptr(d) & 63)
	copy(dst[:head], src[:head])

	end := head + (n-head)&^(blockSize-1)
	for off := head; off < end; off += chunkSize {
		m := min(chunkSize, end-off)
		bulk(k, unsafe.Add(d, off), unsafe.Add(s, off), uintptr(m))
	}
	copy(dst[end:n], src[end:n])
	return n
}

// overlap reports whether a and b, both non-empty, share any byte.
func overlap(a, b []byte) bool {
	pa := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	pb := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}
