//go:build amd64 && !purego

package memcopy

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// defaultKernel is the kernel NT uses. AVX2 is preferred even where AVX-512
// exists: on this project's reference machine (AMD EPYC Zen 4, which executes
// 512-bit stores as two 256-bit halves) the ZMM kernel measured no faster —
// see the package documentation.
var defaultKernel = func() kernel {
	if cpu.X86.HasAVX2 {
		return kernelAVX2
	}
	return kernelGeneric
}()

// supported reports whether k can run on this CPU. x/sys/cpu only sets the
// AVX flags when the OS also saves the YMM/ZMM state (XGETBV), which is what
// makes them safe to use.
func supported(k kernel) bool {
	switch k {
	case kernelGeneric:
		return true
	case kernelAVX2:
		return cpu.X86.HasAVX2
	case kernelAVX512:
		return cpu.X86.HasAVX512F
	}
	return false
}

// bulk copies n bytes, n a multiple of blockSize, from src to dst, which is
// 64-byte aligned, with kernel k, and returns once the streaming stores are
// globally visible (SFENCE).
func bulk(k kernel, dst, src unsafe.Pointer, n uintptr) {
	switch k {
	case kernelAVX512:
		ntAVX512(dst, src, n)
	case kernelAVX2:
		ntAVX2(dst, src, n)
	default:
		copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
	}
}

// ntAVX2 is implemented in nt_amd64.s.
//
//go:noescape
func ntAVX2(dst, src unsafe.Pointer, n uintptr)

// ntAVX512 is implemented in nt_amd64.s.
//
//go:noescape
func ntAVX512(dst, src unsafe.Pointer, n uintptr)
