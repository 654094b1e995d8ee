package vecop

// SumFloat64 sets dst[i] += src[i] for every element of dst.
func SumFloat64(dst, src []float64) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		addPD(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	sumGo(dst, src)
}

// ProdFloat64 sets dst[i] *= src[i] for every element of dst.
func ProdFloat64(dst, src []float64) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		mulPD(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	prodGo(dst, src)
}

// MinFloat64 sets dst[i] = min(dst[i], src[i]) for every element of dst.
func MinFloat64(dst, src []float64) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		minPD(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	minGo(dst, src)
}

// MaxFloat64 sets dst[i] = max(dst[i], src[i]) for every element of dst.
func MaxFloat64(dst, src []float64) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		maxPD(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	maxGo(dst, src)
}

// SumFloat32 sets dst[i] += src[i] for every element of dst.
func SumFloat32(dst, src []float32) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		addPS(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	sumGo(dst, src)
}

// ProdFloat32 sets dst[i] *= src[i] for every element of dst.
func ProdFloat32(dst, src []float32) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		mulPS(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	prodGo(dst, src)
}

// MinFloat32 sets dst[i] = min(dst[i], src[i]) for every element of dst.
func MinFloat32(dst, src []float32) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		minPS(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	minGo(dst, src)
}

// MaxFloat32 sets dst[i] = max(dst[i], src[i]) for every element of dst.
func MaxFloat32(dst, src []float32) {
	src = src[:len(dst)]
	if n := asmLen(dst); n > 0 {
		maxPS(addr(dst), addr(src), size(dst[:n]))
		dst, src = dst[n:], src[n:]
	}
	maxGo(dst, src)
}
