package coll

import (
	"fmt"
	"reflect"
	"unsafe"
)

// OpCode names a predefined reduction operation.
type OpCode uint8

// The predefined operations, as MPI's MPI_SUM … MPI_BXOR. Every one is
// commutative and associative (floating-point sums and products up to
// rounding: the order of combination depends on the algorithm, as in
// every MPI).
const (
	OpSum OpCode = iota + 1
	OpProd
	OpMin
	OpMax
	OpLAnd // logical: non-zero is true, the result 1 or 0
	OpLOr
	OpLXor
	OpBAnd // bitwise: integers only
	OpBOr
	OpBXor
)

var opNames = map[OpCode]string{OpSum: "sum", OpProd: "prod", OpMin: "min", OpMax: "max",
	OpLAnd: "land", OpLOr: "lor", OpLXor: "lxor", OpBAnd: "band", OpBOr: "bor", OpBXor: "bxor"}

func (o OpCode) String() string { return opNames[o] }

// Kernel returns the Reducer that applies op to elements of kind k (the
// underlying kind of the element type), or an error naming what is not
// defined: ordering and logical operations on complex numbers, bitwise
// operations on floats. Kernels are made once, so a call allocates
// nothing (a generic function's closure carries its type's dictionary,
// and would be allocated at every call).
func Kernel(op OpCode, k reflect.Kind) (Reducer, error) {
	if int(op) < len(kernels) && int(k) < len(kernels[op]) {
		if r := kernels[op][k]; r != nil {
			return r, nil
		}
	}
	return nil, fmt.Errorf("reduction %s is not defined on %s", op, k)
}

// kernels holds every defined kernel by operation and element kind.
var kernels = func() (t [OpBXor + 1][reflect.UnsafePointer + 1]Reducer) {
	for op := OpSum; op <= OpBXor; op++ {
		for k := reflect.Invalid; k <= reflect.UnsafePointer; k++ {
			t[op][k] = makeKernel(op, k)
		}
	}
	return t
}()

// makeKernel returns op's Reducer for kind k, or nil if op is not defined
// on it: vecop's kernel where there is one, else the generic loop.
func makeKernel(op OpCode, k reflect.Kind) Reducer {
	if r := vecopKernel(op, k); r != nil {
		return r
	}
	return genericKernel(op, k)
}

// genericKernel returns op's Reducer for kind k as a loop over one
// element at a time, or nil if op is not defined on it.
func genericKernel(op OpCode, k reflect.Kind) Reducer {
	var r Reducer
	switch k {
	case reflect.Int8:
		r = integerKernel[int8](op)
	case reflect.Int16:
		r = integerKernel[int16](op)
	case reflect.Int32:
		r = integerKernel[int32](op)
	case reflect.Int64:
		r = integerKernel[int64](op)
	case reflect.Int:
		if unsafe.Sizeof(int(0)) == 4 {
			r = integerKernel[int32](op)
		} else {
			r = integerKernel[int64](op)
		}
	case reflect.Uint8:
		r = integerKernel[uint8](op)
	case reflect.Uint16:
		r = integerKernel[uint16](op)
	case reflect.Uint32:
		r = integerKernel[uint32](op)
	case reflect.Uint64:
		r = integerKernel[uint64](op)
	case reflect.Uint, reflect.Uintptr:
		if unsafe.Sizeof(uint(0)) == 4 {
			r = integerKernel[uint32](op)
		} else {
			r = integerKernel[uint64](op)
		}
	case reflect.Float32:
		r = floatKernel[float32](op)
	case reflect.Float64:
		r = floatKernel[float64](op)
	case reflect.Complex64:
		r = complexKernel[complex64](op)
	case reflect.Complex128:
		r = complexKernel[complex128](op)
	}
	return r
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

type float interface{ ~float32 | ~float64 }

type ordered interface{ integer | float }

type number interface {
	ordered | ~complex64 | ~complex128
}

// view sees b as a slice of T; b's start is aligned for T (buffers come
// from []T or from words, at offsets that are multiples of T's size).
func view[T any](b []byte) []T {
	var x T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(x)))
}

// elementwise makes a Reducer of a commutative function of two elements.
// Loops over concrete types: the compiler inlines f in each instantiation.
func elementwise[T any](f func(a, b T) T) Reducer {
	return func(dst, src []byte, _ bool) {
		d, s := view[T](dst), view[T](src)
		s = s[:len(d)]
		for i := range d {
			d[i] = f(d[i], s[i])
		}
	}
}

func arithmetic[T number](op OpCode) Reducer {
	switch op {
	case OpSum:
		return func(dst, src []byte, _ bool) {
			d, s := view[T](dst), view[T](src)
			s = s[:len(d)]
			for i := range d {
				d[i] += s[i]
			}
		}
	case OpProd:
		return func(dst, src []byte, _ bool) {
			d, s := view[T](dst), view[T](src)
			s = s[:len(d)]
			for i := range d {
				d[i] *= s[i]
			}
		}
	case OpLAnd:
		return elementwise(func(a, b T) T { return truth[T](a != 0 && b != 0) })
	case OpLOr:
		return elementwise(func(a, b T) T { return truth[T](a != 0 || b != 0) })
	case OpLXor:
		return elementwise(func(a, b T) T { return truth[T]((a != 0) != (b != 0)) })
	}
	return nil
}

func truth[T number](b bool) T {
	if b {
		return 1
	}
	return 0
}

func ordering[T ordered](op OpCode) Reducer {
	switch op {
	case OpMin:
		return func(dst, src []byte, _ bool) {
			d, s := view[T](dst), view[T](src)
			s = s[:len(d)]
			for i := range d {
				d[i] = min(d[i], s[i])
			}
		}
	case OpMax:
		return func(dst, src []byte, _ bool) {
			d, s := view[T](dst), view[T](src)
			s = s[:len(d)]
			for i := range d {
				d[i] = max(d[i], s[i])
			}
		}
	}
	return arithmetic[T](op)
}

func integerKernel[T integer](op OpCode) Reducer {
	switch op {
	case OpBAnd:
		return elementwise(func(a, b T) T { return a & b })
	case OpBOr:
		return elementwise(func(a, b T) T { return a | b })
	case OpBXor:
		return elementwise(func(a, b T) T { return a ^ b })
	}
	return ordering[T](op)
}

func floatKernel[T float](op OpCode) Reducer { return ordering[T](op) }

// complexKernel has Sum and Prod only: ordering, logical truth and bits
// are not defined on complex numbers (as in MPI: its logical operations
// take integers and logicals).
func complexKernel[T ~complex64 | ~complex128](op OpCode) Reducer {
	if op == OpSum || op == OpProd {
		return arithmetic[T](op)
	}
	return nil
}
