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
)

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
	var old uint64
	switch op {
	case OpNoOp:
		old = atomic.LoadUint64(p)
	case OpReplace:
		old = atomic.SwapUint64(p, binary.LittleEndian.Uint64(src))
	default:
		var b [8]byte
		for {
			old = atomic.LoadUint64(p)
			binary.LittleEndian.PutUint64(b[:], old)
			red(b[:], src, false)
			if atomic.CompareAndSwapUint64(p, old, binary.LittleEndian.Uint64(b[:])) {
				break
			}
		}
	}
	if fetch != nil {
		binary.LittleEndian.PutUint64(fetch, old)
	}
}

func accumulate32(p *uint32, src, fetch []byte, op OpCode, red coll.Reducer) {
	var old uint32
	switch op {
	case OpNoOp:
		old = atomic.LoadUint32(p)
	case OpReplace:
		old = atomic.SwapUint32(p, binary.LittleEndian.Uint32(src))
	default:
		var b [4]byte
		for {
			old = atomic.LoadUint32(p)
			binary.LittleEndian.PutUint32(b[:], old)
			red(b[:], src, false)
			if atomic.CompareAndSwapUint32(p, old, binary.LittleEndian.Uint32(b[:])) {
				break
			}
		}
	}
	if fetch != nil {
		binary.LittleEndian.PutUint32(fetch, old)
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
	p := unsafe.Pointer(&mem[0])
	if elem == 8 {
		want, next := binary.LittleEndian.Uint64(compare), binary.LittleEndian.Uint64(swap)
		for {
			old := atomic.LoadUint64((*uint64)(p))
			if old != want || atomic.CompareAndSwapUint64((*uint64)(p), old, next) {
				binary.LittleEndian.PutUint64(result, old)
				return
			}
		}
	}
	want, next := binary.LittleEndian.Uint32(compare), binary.LittleEndian.Uint32(swap)
	for {
		old := atomic.LoadUint32((*uint32)(p))
		if old != want || atomic.CompareAndSwapUint32((*uint32)(p), old, next) {
			binary.LittleEndian.PutUint32(result, old)
			return
		}
	}
}
