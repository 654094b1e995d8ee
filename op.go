package commtune

import (
	"fmt"
	"reflect"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/rma"
)

// Op is a reduction operation for Reduce, Allreduce, ReduceScatter,
// ReduceScatterBlock, Scan and Exscan: one of the predefined operations
// below, or one made by NewOp.
type Op struct {
	name        string
	code        coll.OpCode // a predefined operation; 0 for NewOp's
	user        any         // func(a, b T) T for NewOp's
	rma         rma.OpCode  // Replace and NoOp: one-sided accumulates only
	commutative bool
}

// The predefined operations, MPI's MPI_SUM … MPI_BXOR. Sum and Prod apply
// to every Number type, Min and Max to integers and floats, the logical
// operations (non-zero is true; the result is 1 or 0) to integers and
// floats, the bitwise ones to integers. Floating-point sums and products
// are combined in an order that depends on the algorithm, as in every
// MPI, so their last bits may differ between algorithms.
var (
	Sum  = Op{name: "sum", code: coll.OpSum, commutative: true}
	Prod = Op{name: "prod", code: coll.OpProd, commutative: true}
	Min  = Op{name: "min", code: coll.OpMin, commutative: true}
	Max  = Op{name: "max", code: coll.OpMax, commutative: true}
	LAnd = Op{name: "land", code: coll.OpLAnd, commutative: true}
	LOr  = Op{name: "lor", code: coll.OpLOr, commutative: true}
	LXor = Op{name: "lxor", code: coll.OpLXor, commutative: true}
	BAnd = Op{name: "band", code: coll.OpBAnd, commutative: true}
	BOr  = Op{name: "bor", code: coll.OpBOr, commutative: true}
	BXor = Op{name: "bxor", code: coll.OpBXor, commutative: true}
)

// Replace and NoOp are the operations only one-sided accumulates take
// (MPI_REPLACE, MPI_NO_OP): Replace stores the origin's elements, NoOp
// leaves the target's as they are (GetAccumulate with NoOp is an atomic
// read). A collective given either fails.
var (
	Replace = Op{name: "replace", rma: rma.OpReplace}
	NoOp    = Op{name: "no-op", rma: rma.OpNoOp}
)

// NewOp makes a reduction of T elements from fn, which must be
// associative: fn(a, b) combines a, the contribution of lower ranks, with
// b, that of higher ones. A non-commutative operation is applied in rank
// order, r0 ⊕ r1 ⊕ … ⊕ rn−1; algorithms that cannot keep that order are
// not used for it (and refuse it when forced). T must be an element type
// the collectives take, a Number or a plain type of non-zero size: with
// any other T (struct{}, or one holding a pointer, string or bool) the
// call returns an error before fn is ever called.
func NewOp[T any](name string, fn func(a, b T) T, commutative bool) Op {
	return Op{name: name, user: fn, commutative: commutative}
}

// Name returns the operation's name.
func (o Op) Name() string { return o.name }

// Commutative reports whether the operation's operands may be swapped.
func (o Op) Commutative() bool { return o.commutative }

// loneLogical returns, for a logical operation on a one-rank
// communicator, the step that makes its result 1 or 0: the schedule just
// copies the input there, where two ranks' values would have been combined.
// It combines the result with the operation's identity (1 for LAnd, 0 for
// LOr and LXor). Nil otherwise.
func loneLogical[T any](o Op, red coll.Reducer, size int, out []byte) func() {
	return singleLogical[T](o, red, size == 1, out)
}

// singleLogical is loneLogical for any result that is one rank's
// contribution by itself (alone), such as Scan's on rank 0.
func singleLogical[T any](o Op, red coll.Reducer, alone bool, out []byte) func() {
	if !alone || len(out) == 0 || o.code != coll.OpLAnd && o.code != coll.OpLOr && o.code != coll.OpLXor {
		return nil
	}
	return func() {
		id := make([]T, len(out)/elemSize[T]())
		if o.code == coll.OpLAnd {
			one := oneOf[T]()
			for i := range id {
				id[i] = one
			}
		}
		red(out, bytesOf(id), false)
	}
}

// oneOf returns 1 as a T of a numeric kind (a logical operation's kernel
// exists only for those); the zero T otherwise.
func oneOf[T any]() T {
	v := reflect.New(reflect.TypeFor[T]()).Elem()
	switch k := v.Kind(); {
	case k >= reflect.Int && k <= reflect.Int64:
		v.SetInt(1)
	case k >= reflect.Uint && k <= reflect.Uintptr:
		v.SetUint(1)
	case k == reflect.Float32 || k == reflect.Float64:
		v.SetFloat(1)
	case k == reflect.Complex64 || k == reflect.Complex128:
		v.SetComplex(1)
	}
	return v.Interface().(T)
}

// reducer returns o's kernel for T elements.
func reducer[T any](o Op) (coll.Reducer, error) {
	if o.rma != 0 {
		return nil, fmt.Errorf("commtune: operation %q is for one-sided accumulates only", o.name)
	}
	if o.code != 0 {
		r, err := coll.Kernel(o.code, reflect.TypeFor[T]().Kind())
		if err != nil {
			return nil, fmt.Errorf("commtune: %w", err)
		}
		return r, nil
	}
	fn, ok := o.user.(func(a, b T) T)
	if !ok {
		if o.user == nil {
			return nil, fmt.Errorf("commtune: reduction operation is the zero Op; use Sum, Max … or NewOp")
		}
		return nil, fmt.Errorf("commtune: operation %q combines %s, not %s", o.name, reflect.TypeOf(o.user).In(0), reflect.TypeFor[T]())
	}
	return func(dst, src []byte, srcFirst bool) {
		d, s := fromBytes[T](dst), fromBytes[T](src)
		s = s[:len(d)]
		if srcFirst {
			for i := range d {
				d[i] = fn(s[i], d[i])
			}
			return
		}
		for i := range d {
			d[i] = fn(d[i], s[i])
		}
	}, nil
}
