package vecop

import "encoding/binary"

// The Go loops: the kernels on CPUs without AVX2 and on other
// architectures, and the tail shorter than a block everywhere. They
// handle 8 elements per iteration: converting to [8]T array pointers
// checks the bounds once for the 8, and the loop counter moves once per 8
// elements instead of once per element. Each statement has the scalar
// loop's form, d[i] op= s[i] or d[i] = f(d[i], s[i]), so that on amd64 it
// compiles to the scalar loop's instructions with the same operand order,
// hence the same NaN payloads (the tests check it; the package
// documentation says what holds elsewhere).
//
// Race builds run only the plain loop: with the detector's calls between
// the loads the register allocator may swap the operands of an addition
// (commutative to it) in the unrolled body, so that of two NaNs the
// other one comes out; the plain loop is compiled as the scalar kernel
// is, in both modes. The callers have cut src to len(dst).

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

type float interface{ ~float32 | ~float64 }

type number interface{ integer | float }

// unroll is the number of elements per iteration of the Go loops.
const unroll = 8

func sumGo[T number](dst, src []T) {
	i := 0
	if !raceEnabled {
		for ; i+unroll <= len(dst); i += unroll {
			d, s := (*[unroll]T)(dst[i:]), (*[unroll]T)(src[i:])
			d[0] += s[0]
			d[1] += s[1]
			d[2] += s[2]
			d[3] += s[3]
			d[4] += s[4]
			d[5] += s[5]
			d[6] += s[6]
			d[7] += s[7]
		}
	}
	for ; i < len(dst); i++ {
		dst[i] += src[i]
	}
}

func prodGo[T number](dst, src []T) {
	i := 0
	if !raceEnabled {
		for ; i+unroll <= len(dst); i += unroll {
			d, s := (*[unroll]T)(dst[i:]), (*[unroll]T)(src[i:])
			d[0] *= s[0]
			d[1] *= s[1]
			d[2] *= s[2]
			d[3] *= s[3]
			d[4] *= s[4]
			d[5] *= s[5]
			d[6] *= s[6]
			d[7] *= s[7]
		}
	}
	for ; i < len(dst); i++ {
		dst[i] *= src[i]
	}
}

func minGo[T number](dst, src []T) {
	i := 0
	if !raceEnabled {
		for ; i+unroll <= len(dst); i += unroll {
			d, s := (*[unroll]T)(dst[i:]), (*[unroll]T)(src[i:])
			d[0] = min(d[0], s[0])
			d[1] = min(d[1], s[1])
			d[2] = min(d[2], s[2])
			d[3] = min(d[3], s[3])
			d[4] = min(d[4], s[4])
			d[5] = min(d[5], s[5])
			d[6] = min(d[6], s[6])
			d[7] = min(d[7], s[7])
		}
	}
	for ; i < len(dst); i++ {
		dst[i] = min(dst[i], src[i])
	}
}

func maxGo[T number](dst, src []T) {
	i := 0
	if !raceEnabled {
		for ; i+unroll <= len(dst); i += unroll {
			d, s := (*[unroll]T)(dst[i:]), (*[unroll]T)(src[i:])
			d[0] = max(d[0], s[0])
			d[1] = max(d[1], s[1])
			d[2] = max(d[2], s[2])
			d[3] = max(d[3], s[3])
			d[4] = max(d[4], s[4])
			d[5] = max(d[5], s[5])
			d[6] = max(d[6], s[6])
			d[7] = max(d[7], s[7])
		}
	}
	for ; i < len(dst); i++ {
		dst[i] = max(dst[i], src[i])
	}
}

// The bitwise loops combine 8-byte words, 4 per iteration: the bits are
// the same whatever the element size, and loading and storing in the same
// byte order keeps every byte in place.
var word = binary.NativeEndian

func andGo(dst, src []byte) {
	i := 0
	for ; i+32 <= len(dst); i += 32 {
		d, s := dst[i:i+32:i+32], src[i:i+32:i+32]
		word.PutUint64(d[0:], word.Uint64(d[0:])&word.Uint64(s[0:]))
		word.PutUint64(d[8:], word.Uint64(d[8:])&word.Uint64(s[8:]))
		word.PutUint64(d[16:], word.Uint64(d[16:])&word.Uint64(s[16:]))
		word.PutUint64(d[24:], word.Uint64(d[24:])&word.Uint64(s[24:]))
	}
	for ; i < len(dst); i++ {
		dst[i] &= src[i]
	}
}

func orGo(dst, src []byte) {
	i := 0
	for ; i+32 <= len(dst); i += 32 {
		d, s := dst[i:i+32:i+32], src[i:i+32:i+32]
		word.PutUint64(d[0:], word.Uint64(d[0:])|word.Uint64(s[0:]))
		word.PutUint64(d[8:], word.Uint64(d[8:])|word.Uint64(s[8:]))
		word.PutUint64(d[16:], word.Uint64(d[16:])|word.Uint64(s[16:]))
		word.PutUint64(d[24:], word.Uint64(d[24:])|word.Uint64(s[24:]))
	}
	for ; i < len(dst); i++ {
		dst[i] |= src[i]
	}
}

func xorGo(dst, src []byte) {
	i := 0
	for ; i+32 <= len(dst); i += 32 {
		d, s := dst[i:i+32:i+32], src[i:i+32:i+32]
		word.PutUint64(d[0:], word.Uint64(d[0:])^word.Uint64(s[0:]))
		word.PutUint64(d[8:], word.Uint64(d[8:])^word.Uint64(s[8:]))
		word.PutUint64(d[16:], word.Uint64(d[16:])^word.Uint64(s[16:]))
		word.PutUint64(d[24:], word.Uint64(d[24:])^word.Uint64(s[24:]))
	}
	for ; i < len(dst); i++ {
		dst[i] ^= src[i]
	}
}
