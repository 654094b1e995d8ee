package rma

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/commtune/commtune/internal/coll"
)

// OpCode names an accumulate's operation on the wire: the collectives'
// predefined reductions (coll.OpCode), and Replace and NoOp, which only
// one-sided accumulates take.
type OpCode uint8

// The operations accumulates take beyond the reductions: MPI_REPLACE and
// MPI_NO_OP.
const (
	OpReplace OpCode = 0xF0
	OpNoOp    OpCode = 0xF1
	// opAdd is Sum on integers as accumulate carries it out (never on the
	// wire): two's-complement addition, signed or not.
	opAdd OpCode = 0xF2
)

// localOp returns the code accumulate takes for op on elements of kind k.
func localOp(op OpCode, k reflect.Kind) OpCode {
	if op == OpCode(coll.OpSum) && (k >= reflect.Int && k <= reflect.Uintptr) {
		return opAdd
	}
	return op
}

// Kernel returns how op combines elements of kind k in place, dst = dst op
// src, or an error if op does not apply to them.
func Kernel(op OpCode, k reflect.Kind) (coll.Reducer, error) {
	switch op {
	case OpReplace:
		return func(dst, src []byte, _ bool) { copy(dst, src) }, nil
	case OpNoOp:
		return func([]byte, []byte, bool) {}, nil
	}
	if op == 0 || op >= OpReplace {
		return nil, fmt.Errorf("unknown accumulate operation %d", op)
	}
	return coll.Kernel(coll.OpCode(op), k)
}

// atomicWidth reports whether elements of elem bytes at mem's start have a
// hardware atomic operation: 4 or 8 bytes, aligned. The answer depends on
// the target's memory alone, so every origin of a target agrees on it.
func atomicWidth(mem []byte, elem int) bool {
	if len(mem) == 0 || (elem != 4 && elem != 8) {
		return false
	}
	return uintptr(unsafe.Pointer(&mem[0]))%uintptr(elem) == 0
}

// accumulate combines src into mem (whole elements of elem bytes) with red,
// element-wise atomically, first copying mem's old contents to fetch if it
// is not nil (GetAccumulate, FetchAndOp). base is the whole window, whose
// alignment decides how (atomicWidth); h guards elements without atomics.
//
// op is OpAdd for Sum on integers: a fetch-and-add where the hardware has
// one, in place of a compare-and-swap loop.
func accumulate(base, mem, src, fetch []byte, elem int, op OpCode, red coll.Reducer, h *Header) {
	if !atomicWidth(base, elem) {
		h.accLock()
		if fetch != nil {
			copy(fetch, mem)
		}
		red(mem[:len(src)], src, false)
		h.accUnlock()
		return
	}
	for i := 0; i+elem <= len(src); i += elem {
		p := unsafe.Pointer(&mem[i])
		var f []byte
		if fetch != nil {
			f = fetch[i : i+elem]
		}
		if elem == 8 {
			accumulate64((*uint64)(p), src[i:i+8], f, op, red)
		} else {
			accumulate32((*uint32)(p), src[i:i+4], f, op, red)
		}
	}
}

func accumulate64(p *uint64, src, fetch []byte, op OpCode, red coll.Reducer) {
	old := fetchOp(unsafe.Pointer(p), 8, binary.LittleEndian.Uint64(src), op, red)
	if fetch != nil {
		binary.LittleEndian.PutUint64(fetch, old)
	}
}

func accumulate32(p *uint32, src, fetch []byte, op OpCode, red coll.Reducer) {
	old := fetchOp(unsafe.Pointer(p), 4, uint64(binary.LittleEndian.Uint32(src)), op, red)
	if fetch != nil {
		binary.LittleEndian.PutUint32(fetch, uint32(old))
	}
}

// fetchOp combines v (an element's bits) into the element of elem bytes
// (4 or 8, aligned) at p with op, atomically, and returns the element's
// old bits. Integer sums, NoOp and Replace are one instruction; other
// operations a compare-and-swap loop around red. Values travel as
// integers, not slices, so that a call allocates nothing.
func fetchOp(p unsafe.Pointer, elem int, v uint64, op OpCode, red coll.Reducer) uint64 {
	if elem == 4 {
		p32 := (*uint32)(p)
		switch op {
		case OpNoOp:
			return uint64(atomic.LoadUint32(p32))
		case OpReplace:
			return uint64(atomic.SwapUint32(p32, uint32(v)))
		case opAdd:
			return uint64(atomic.AddUint32(p32, uint32(v)) - uint32(v))
		}
		var cur, in [4]byte
		binary.LittleEndian.PutUint32(in[:], uint32(v))
		for {
			old := atomic.LoadUint32(p32)
			binary.LittleEndian.PutUint32(cur[:], old)
			red(cur[:], in[:], false)
			if atomic.CompareAndSwapUint32(p32, old, binary.LittleEndian.Uint32(cur[:])) {
				return uint64(old)
			}
		}
	}
	p64 := (*uint64)(p)
	switch op {
	case OpNoOp:
		return atomic.LoadUint64(p64)
	case OpReplace:
		return atomic.SwapUint64(p64, v)
	case opAdd:
		return atomic.AddUint64(p64, v) - v
	}
	var cur, in [8]byte
	binary.LittleEndian.PutUint64(in[:], v)
	for {
		old := atomic.LoadUint64(p64)
		binary.LittleEndian.PutUint64(cur[:], old)
		red(cur[:], in[:], false)
		if atomic.CompareAndSwapUint64(p64, old, binary.LittleEndian.Uint64(cur[:])) {
			return old
		}
	}
}

// casBits is compareAndSwap of an element of elem bytes (4 or 8, aligned)
// at p given as bits.
func casBits(p unsafe.Pointer, elem int, want, next uint64) uint64 {
	if elem == 4 {
		for {
			old := atomic.LoadUint32((*uint32)(p))
			if old != uint32(want) || atomic.CompareAndSwapUint32((*uint32)(p), old, uint32(next)) {
				return uint64(old)
			}
		}
	}
	for {
		old := atomic.LoadUint64((*uint64)(p))
		if old != want || atomic.CompareAndSwapUint64((*uint64)(p), old, next) {
			return old
		}
	}
}

// compareAndSwap replaces the element at mem with swap if it equals
// compare (bit for bit), copying its old value to result; atomic as
// accumulate is.
func compareAndSwap(base, mem, compare, swap, result []byte, h *Header) {
	elem := len(compare)
	if !atomicWidth(base, elem) {
		h.accLock()
		copy(result, mem[:elem])
		if string(mem[:elem]) == string(compare) {
			copy(mem, swap)
		}
		h.accUnlock()
		return
	}
	old := casBits(unsafe.Pointer(&mem[0]), elem, leBits(compare), leBits(swap))
	putBits(result, old)
}

// leBits returns the little-endian bits of an element of 4 or 8 bytes.
func leBits(b []byte) uint64 {
	if len(b) == 4 {
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

// putBits stores bits in an element of 4 or 8 bytes.
func putBits(b []byte, v uint64) {
	if len(b) == 4 {
		binary.LittleEndian.PutUint32(b, uint32(v))
		return
	}
	binary.LittleEndian.PutUint64(b, v)
}
