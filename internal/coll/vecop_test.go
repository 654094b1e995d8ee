package coll

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"unsafe"
)

// specialBits are element bit patterns where kernels tend to differ: NaNs
// quiet and signalling with payloads, signed zeros, infinities, and the
// integer extremes; of each, the low size bytes.
var specialBits = []uint64{
	0, 1, 2, 0xff, 0x7f, 0x80, 0x7fff, 0x8000, 0x7fffffff, 0x80000000, 0x7fffffffffffffff, 0x8000000000000000,
	math.MaxUint64, math.MaxUint32, math.Float64bits(math.Copysign(0, -1)), math.Float64bits(math.Inf(1)),
	math.Float64bits(math.Inf(-1)), 0x7ff8000000000001, 0xfffc0000deadbeef, 0x7ff0000000000001, 0xfff4000000000000,
	math.Float64bits(1.5), math.Float64bits(-3),
	uint64(math.Float32bits(float32(math.Copysign(0, -1)))), uint64(math.Float32bits(float32(math.Inf(1)))),
	0x7fc00001, 0xffe0beef, 0x7f800001, 0xffa00000, uint64(math.Float32bits(1.5)), 0xff800000,
}

// fillElements sets b's size-byte elements to special bit patterns, random
// bits or small numbers, a third of each.
func fillElements(r *rand.Rand, b []byte, size int) {
	var e [8]byte
	for i := 0; i+size <= len(b); i += size {
		switch r.IntN(3) {
		case 0:
			binary.LittleEndian.PutUint64(e[:], specialBits[r.IntN(len(specialBits))])
		case 1:
			binary.LittleEndian.PutUint64(e[:], r.Uint64())
		default:
			binary.LittleEndian.PutUint64(e[:], uint64(r.IntN(9)-4))
		}
		copy(b[i:i+size], e[:size])
	}
}

// TestVecopKernelsMatchGeneric: every kernel taken from vecop gives the
// generic loop's bits, on every kind it serves, at lengths around the
// vector blocks and at element offsets from a cache line.
func TestVecopKernelsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for op := OpSum; op <= OpBXor; op++ {
		for k := reflect.Invalid; k <= reflect.UnsafePointer; k++ {
			if vecopKernel(op, k) == nil {
				continue
			}
			got, want := mustKernel(op, k), genericKernel(op, k)
			if want == nil {
				t.Fatalf("%s on %s: vecop has a kernel, the generic code none", op, k)
			}
			size := kindSize(k)
			t.Run(op.String()+"/"+k.String(), func(t *testing.T) {
				for _, n := range []int{0, 1, 7, 15, 16, 17, 31, 33, 63, 64, 65, 129, 1000} {
					for off := range 4 {
						buf := make([]byte, (n+off+1)*size+64)
						base := int(-uintptr(unsafe.Pointer(unsafe.SliceData(buf))) & 63)
						dst := buf[base+off*size : base+(off+n)*size]
						src := make([]byte, len(dst))
						fillElements(r, dst, size)
						fillElements(r, src, size)
						ref := append([]byte(nil), dst...)
						want(ref, src, false)
						got(dst, src, false)
						for i := 0; i < len(dst); i += size {
							if string(dst[i:i+size]) != string(ref[i:i+size]) {
								t.Fatalf("%d elements at offset %d: element %d is % x, want % x (src % x)",
									n, off, i/size, dst[i:i+size], ref[i:i+size], src[i:i+size])
							}
						}
					}
				}
			})
		}
	}
}

// kindSize returns the size of an element of kind k.
func kindSize(k reflect.Kind) int {
	switch k {
	case reflect.Int8, reflect.Uint8:
		return 1
	case reflect.Int16, reflect.Uint16:
		return 2
	case reflect.Int32, reflect.Uint32, reflect.Float32:
		return 4
	case reflect.Int, reflect.Uint, reflect.Uintptr:
		return int(unsafe.Sizeof(uint(0)))
	}
	return 8
}

// TestKernelsDoNotAllocate: a call to a kernel allocates nothing, vecop's
// or generic.
func TestKernelsDoNotAllocate(t *testing.T) {
	dst, src := make([]byte, 4096), make([]byte, 4096)
	for _, k := range []struct {
		op   OpCode
		kind reflect.Kind
	}{{OpSum, reflect.Float64}, {OpMax, reflect.Uint32}, {OpBXor, reflect.Int}, {OpProd, reflect.Int8}, {OpSum, reflect.Complex128}} {
		r := mustKernel(k.op, k.kind)
		if n := testing.AllocsPerRun(20, func() { r(dst, src, false) }); n != 0 {
			t.Errorf("%s on %s: %v allocations per call", k.op, k.kind, n)
		}
	}
}
