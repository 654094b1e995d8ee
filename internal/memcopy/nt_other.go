//go:build !amd64 || purego

package memcopy

import "unsafe"

// defaultKernel is the plain copy(): there is no streaming-store kernel for
// this architecture (or the purego tag asked for none).
var defaultKernel = kernelGeneric

// supported reports whether k can run here: only the generic kernel can.
func supported(k kernel) bool { return k == kernelGeneric }

// bulk copies n bytes from src to dst with copy(); it is only reached if a
// caller forces kernelGeneric through ntWith.
func bulk(_ kernel, dst, src unsafe.Pointer, n uintptr) {
	copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
}
