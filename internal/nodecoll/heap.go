package nodecoll

import "unsafe"

// HeapParts returns n parts of l in ordinary memory, each on its own cache
// lines: the memory of goroutine ranks.
func HeapParts(n int, l Layout) [][]byte {
	size := l.PartSize()
	buf := make([]byte, n*size+Line)
	off := int(-uintptr(unsafe.Pointer(&buf[0])) & (Line - 1))
	parts := make([][]byte, n)
	for r := range parts {
		parts[r] = buf[off+r*size : off+(r+1)*size : off+(r+1)*size]
	}
	return parts
}
