package vecop

import "unsafe"

// blockSize is the number of bytes the assembly kernels combine per
// iteration; they take whole blocks only, and the Go loops do the rest.
const blockSize = 128

// asmLen returns how many leading elements of dst the assembly kernel
// combines: a whole number of blocks, or none when the kernels are not in
// use.
func asmLen[T any](dst []T) int {
	if !useAsm {
		return 0
	}
	return len(dst) &^ (blockSize/int(unsafe.Sizeof(dst[0])) - 1)
}

// addr returns the address of s's first element.
func addr[T any](s []T) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }

// size returns the size of s's elements in bytes.
func size[T any](s []T) uintptr { return uintptr(len(s)) * unsafe.Sizeof(*new(T)) }
