package memcopy

// kernel names one implementation of NT's bulk loop. The head and tail of a
// copy are always done by copy(); a kernel only moves whole blocks to a
// 64-byte-aligned destination.
type kernel uint8

const (
	// kernelGeneric is the plain copy() used where no vector kernel exists.
	kernelGeneric kernel = iota
	// kernelAVX2 loads 4×32 bytes and writes them with VMOVNTDQ (YMM).
	kernelAVX2
	// kernelAVX512 loads 4×64 bytes and writes them with VMOVNTDQ (ZMM): one
	// store per cache line, so each write-combining buffer fills in one go.
	kernelAVX512
)

// String returns the name used in test and benchmark names.
func (k kernel) String() string {
	switch k {
	case kernelAVX2:
		return "avx2"
	case kernelAVX512:
		return "avx512"
	default:
		return "generic"
	}
}
