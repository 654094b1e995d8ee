package vecop

// And sets dst[i] &= src[i] for every byte of dst: the bitwise and of
// integers of any size, given their bytes.
func And(dst, src []byte) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		andBits(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	andGo(dst, src)
}

// Or sets dst[i] |= src[i] for every byte of dst: the bitwise or of
// integers of any size, given their bytes.
func Or(dst, src []byte) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		orBits(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	orGo(dst, src)
}

// Xor sets dst[i] ^= src[i] for every byte of dst: the bitwise exclusive or
// of integers of any size, given their bytes.
func Xor(dst, src []byte) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		xorBits(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	xorGo(dst, src)
}
