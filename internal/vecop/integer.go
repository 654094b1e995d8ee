package vecop

// SumInt64 sets dst[i] += src[i] for every element of dst. Use it for
// uint64 too: the wrap-around sum has the same bits.
func SumInt64(dst, src []int64) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		addQ(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	sumGo(dst, src)
}

// ProdInt64 sets dst[i] *= src[i] for every element of dst. Use it for
// uint64 too: the wrap-around product has the same bits.
func ProdInt64(dst, src []int64) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		mulQ(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	prodGo(dst, src)
}

// MinInt64 sets dst[i] = min(dst[i], src[i]) for every element of dst.
func MinInt64(dst, src []int64) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		minSQ(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	minGo(dst, src)
}

// MaxInt64 sets dst[i] = max(dst[i], src[i]) for every element of dst.
func MaxInt64(dst, src []int64) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		maxSQ(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	maxGo(dst, src)
}

// MinUint64 sets dst[i] = min(dst[i], src[i]) for every element of dst.
func MinUint64(dst, src []uint64) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		minUQ(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	minGo(dst, src)
}

// MaxUint64 sets dst[i] = max(dst[i], src[i]) for every element of dst.
func MaxUint64(dst, src []uint64) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		maxUQ(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	maxGo(dst, src)
}

// SumInt32 sets dst[i] += src[i] for every element of dst. Use it for
// uint32 too: the wrap-around sum has the same bits.
func SumInt32(dst, src []int32) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		addD(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	sumGo(dst, src)
}

// ProdInt32 sets dst[i] *= src[i] for every element of dst. Use it for
// uint32 too: the wrap-around product has the same bits.
func ProdInt32(dst, src []int32) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		mulD(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	prodGo(dst, src)
}

// MinInt32 sets dst[i] = min(dst[i], src[i]) for every element of dst.
func MinInt32(dst, src []int32) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		minSD(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	minGo(dst, src)
}

// MaxInt32 sets dst[i] = max(dst[i], src[i]) for every element of dst.
func MaxInt32(dst, src []int32) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		maxSD(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	maxGo(dst, src)
}

// MinUint32 sets dst[i] = min(dst[i], src[i]) for every element of dst.
func MinUint32(dst, src []uint32) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		minUD(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	minGo(dst, src)
}

// MaxUint32 sets dst[i] = max(dst[i], src[i]) for every element of dst.
func MaxUint32(dst, src []uint32) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		maxUD(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	maxGo(dst, src)
}

// SumInt16 sets dst[i] += src[i] for every element of dst. Use it for
// uint16 too: the wrap-around sum has the same bits.
func SumInt16(dst, src []int16) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		addW(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	sumGo(dst, src)
}

// ProdInt16 sets dst[i] *= src[i] for every element of dst. Use it for
// uint16 too: the wrap-around product has the same bits.
func ProdInt16(dst, src []int16) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		mulW(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	prodGo(dst, src)
}

// MinInt16 sets dst[i] = min(dst[i], src[i]) for every element of dst.
func MinInt16(dst, src []int16) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		minSW(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	minGo(dst, src)
}

// MaxInt16 sets dst[i] = max(dst[i], src[i]) for every element of dst.
func MaxInt16(dst, src []int16) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		maxSW(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	maxGo(dst, src)
}

// MinUint16 sets dst[i] = min(dst[i], src[i]) for every element of dst.
func MinUint16(dst, src []uint16) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		minUW(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	minGo(dst, src)
}

// MaxUint16 sets dst[i] = max(dst[i], src[i]) for every element of dst.
func MaxUint16(dst, src []uint16) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		maxUW(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	maxGo(dst, src)
}

// SumInt8 sets dst[i] += src[i] for every element of dst. Use it for uint8
// too: the wrap-around sum has the same bits.
func SumInt8(dst, src []int8) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		addB(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	sumGo(dst, src)
}

// MinInt8 sets dst[i] = min(dst[i], src[i]) for every element of dst.
func MinInt8(dst, src []int8) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		minSB(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	minGo(dst, src)
}

// MaxInt8 sets dst[i] = max(dst[i], src[i]) for every element of dst.
func MaxInt8(dst, src []int8) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		maxSB(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	maxGo(dst, src)
}

// MinUint8 sets dst[i] = min(dst[i], src[i]) for every element of dst.
func MinUint8(dst, src []uint8) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		minUB(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	minGo(dst, src)
}

// MaxUint8 sets dst[i] = max(dst[i], src[i]) for every element of dst.
func MaxUint8(dst, src []uint8) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		maxUB(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	maxGo(dst, src)
}
