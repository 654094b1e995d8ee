//go:build amd64 && !purego

package vecop

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// useAsm selects the AVX2 kernels where they can run: x/sys/cpu reports
// AVX2 only if the OS also saves the YMM registers (XGETBV). Race builds
// use the Go loops, whose loads and stores the detector sees. Tests set it
// to cover both.
var useAsm = hasAsm && !raceEnabled

// hasAsm reports whether this CPU can run the assembly kernels.
var hasAsm = cpu.X86.HasAVX2

// The kernels, in *_amd64.s, combine n bytes of src into dst, n a
// non-zero multiple of blockSize. Their names say the operation and the
// lanes: PD, PS for float64, float32; Q, D, W, B for 64-, 32-, 16- and
// 8-bit integers, S or U for signed or unsigned order.

//go:noescape
func addPD(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func mulPD(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func minPD(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func maxPD(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func addPS(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func mulPS(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func minPS(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func maxPS(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func addQ(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func addD(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func addW(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func addB(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func mulQ(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func mulD(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func mulW(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func minSQ(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func maxSQ(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func minUQ(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func maxUQ(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func minSD(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func maxSD(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func minUD(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func maxUD(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func minSW(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func maxSW(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func minUW(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func maxUW(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func minSB(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func maxSB(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func minUB(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func maxUB(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func andBits(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func orBits(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func xorBits(dst, src unsafe.Pointer, n uintptr)
