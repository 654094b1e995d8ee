package coll

import (
	"reflect"
	"unsafe"

	"github.com/commtune/commtune/internal/vecop"
)

// vecopKernel returns the Reducer that runs vecop's kernel for op on kind
// k, or nil where vecop has none: complex numbers, logical operations and
// 8-bit products keep the generic loops. vecop's results are the generic
// loops' bits, so which one runs changes nothing but the speed. The
// operations are commutative and vecop combines dst ⊕ src as the generic
// loops do, so srcFirst is ignored as there.
func vecopKernel(op OpCode, k reflect.Kind) Reducer {
	switch k {
	case reflect.Int:
		return vecopKernel(op, sized(reflect.Int32, reflect.Int64, unsafe.Sizeof(int(0))))
	case reflect.Uint, reflect.Uintptr:
		return vecopKernel(op, sized(reflect.Uint32, reflect.Uint64, unsafe.Sizeof(uint(0))))
	}
	if k >= reflect.Int8 && k <= reflect.Uint64 { // Int and Uint are mapped above
		switch op {
		case OpBAnd:
			return func(dst, src []byte, _ bool) { vecop.And(dst, src) }
		case OpBOr:
			return func(dst, src []byte, _ bool) { vecop.Or(dst, src) }
		case OpBXor:
			return func(dst, src []byte, _ bool) { vecop.Xor(dst, src) }
		}
	}
	// Sums and products wrap around in two's complement: the same bits for
	// signed and unsigned elements.
	switch k {
	case reflect.Float64:
		return pick(op, vecop.SumFloat64, vecop.ProdFloat64, vecop.MinFloat64, vecop.MaxFloat64)
	case reflect.Float32:
		return pick(op, vecop.SumFloat32, vecop.ProdFloat32, vecop.MinFloat32, vecop.MaxFloat32)
	case reflect.Int64:
		return pick(op, vecop.SumInt64, vecop.ProdInt64, vecop.MinInt64, vecop.MaxInt64)
	case reflect.Uint64:
		return pick(op, vecop.SumInt64, vecop.ProdInt64, vecop.MinUint64, vecop.MaxUint64)
	case reflect.Int32:
		return pick(op, vecop.SumInt32, vecop.ProdInt32, vecop.MinInt32, vecop.MaxInt32)
	case reflect.Uint32:
		return pick(op, vecop.SumInt32, vecop.ProdInt32, vecop.MinUint32, vecop.MaxUint32)
	case reflect.Int16:
		return pick(op, vecop.SumInt16, vecop.ProdInt16, vecop.MinInt16, vecop.MaxInt16)
	case reflect.Uint16:
		return pick(op, vecop.SumInt16, vecop.ProdInt16, vecop.MinUint16, vecop.MaxUint16)
	case reflect.Int8:
		return pick(op, vecop.SumInt8, nil, vecop.MinInt8, vecop.MaxInt8)
	case reflect.Uint8:
		return pick(op, vecop.SumInt8, nil, vecop.MinUint8, vecop.MaxUint8)
	}
	return nil
}

// sized returns k32 or k64, the kind of size size.
func sized(k32, k64 reflect.Kind, size uintptr) reflect.Kind {
	if size == 4 {
		return k32
	}
	return k64
}

// pick returns the Reducer of op's kernel among the four, or nil if op is
// none of them or its kernel is nil. The kernels of sums and products take
// S, those of orderings T: signed and unsigned elements share the former.
func pick[S, T any](op OpCode, sum, prod func(dst, src []S), lo, hi func(dst, src []T)) Reducer {
	switch op {
	case OpSum:
		return reducer(sum)
	case OpProd:
		return reducer(prod)
	case OpMin:
		return reducer(lo)
	case OpMax:
		return reducer(hi)
	}
	return nil
}

// reducer makes a Reducer of a kernel on T elements, or nil if f is nil.
// It is made once per kernel (Kernel's table), so a call allocates
// nothing.
func reducer[T any](f func(dst, src []T)) Reducer {
	if f == nil {
		return nil
	}
	return func(dst, src []byte, _ bool) { f(view[T](dst), view[T](src)) }
}
