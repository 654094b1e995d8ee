package commtune

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"unsafe"
)

// Number is the set of fixed-size numeric types whose memory can be sent
// as bytes, the elements of Bytes. The typed helpers and the collectives
// take these and, checked at run time, plain types made of them: arrays,
// and structs of numbers and arrays only, of non-zero size (checkPlain).
// All ranks must share byte order (every platform commtune runs on is
// little-endian) and the type's layout (one build of the program).
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr |
		~float32 | ~float64 | ~complex64 | ~complex128
}

// Bytes views s's memory as bytes, without copying.
func Bytes[T Number](s []T) []byte { return bytesOf(s) }

// bytesOf views s's memory as bytes, without copying; T must be plain
// (checkPlain) for the bytes to be all of its value.
func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// Count returns the number of T elements a Status's byte count holds. A
// zero-size T, which no typed call moves, counts 0, as MPI_Get_count
// counts for a datatype of size zero: no number of such elements follows
// from a byte count.
func Count[T any](st Status) int {
	size := elemSize[T]()
	if size == 0 {
		return 0
	}
	return st.Count / size
}

// SendSlice sends s to dest with tag, like Send on its bytes.
func SendSlice[T any](ctx context.Context, c *Comm, s []T, dest, tag int) error {
	if err := checkPlain[T](); err != nil {
		return err
	}
	return c.Send(ctx, bytesOf(s), dest, tag)
}

// SsendSlice sends s to dest with tag in synchronous mode, like Ssend on
// its bytes: it returns once the receiver has matched the message.
func SsendSlice[T any](ctx context.Context, c *Comm, s []T, dest, tag int) error {
	if err := checkPlain[T](); err != nil {
		return err
	}
	return c.Ssend(ctx, bytesOf(s), dest, tag)
}

// RecvSlice receives into s from src with tag, like Recv on its bytes; it
// fails if the message is not a whole number of elements.
func RecvSlice[T any](ctx context.Context, c *Comm, s []T, src, tag int) (Status, error) {
	if err := checkPlain[T](); err != nil {
		return Status{}, err
	}
	st, err := c.Recv(ctx, bytesOf(s), src, tag)
	if err == nil {
		err = checkElems[T](st)
	}
	return st, err
}

// IsendSlice starts sending s to dest with tag.
func IsendSlice[T any](c *Comm, s []T, dest, tag int) (*Request, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	return c.Isend(bytesOf(s), dest, tag)
}

// IssendSlice starts a synchronous send of s to dest with tag, like
// Issend on its bytes.
func IssendSlice[T any](c *Comm, s []T, dest, tag int) (*Request, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	return c.Issend(bytesOf(s), dest, tag)
}

// SendrecvReplaceSlice sends s to dest with sendTag and replaces its
// elements with those received from src with recvTag, like
// SendrecvReplace on its bytes; it fails if the message is not a whole
// number of elements.
func SendrecvReplaceSlice[T any](ctx context.Context, c *Comm, s []T, dest, sendTag, src, recvTag int) (Status, error) {
	if err := checkPlain[T](); err != nil {
		return Status{}, err
	}
	st, err := c.SendrecvReplace(ctx, bytesOf(s), dest, sendTag, src, recvTag)
	if err == nil {
		err = checkElems[T](st)
	}
	return st, err
}

// IrecvSlice starts receiving into s from src with tag.
func IrecvSlice[T any](c *Comm, s []T, src, tag int) (*Request, error) {
	if err := checkPlain[T](); err != nil {
		return nil, err
	}
	return c.Irecv(bytesOf(s), src, tag)
}

// checkElems fails if st's byte count is not a whole number of T
// elements. A zero-size T fails too (checkPlain refuses it before any
// message): such elements cannot be counted.
func checkElems[T any](st Status) error {
	if size := elemSize[T](); size == 0 || st.Count%size != 0 {
		return countError(st, size)
	}
	return nil
}

// countError is the error of a received message of st that is not a
// whole number of size-byte elements.
func countError(st Status, size int) error {
	return fmt.Errorf("commtune: received %d bytes from rank %d, not a whole number of %d-byte elements", st.Count, st.Source, size)
}

// fromBytes views b as T elements, without copying; b must be aligned for
// T (it comes from a []T or from coll's scratch, at multiples of T's
// size). A zero-size T gives nil: no element count follows from bytes
// (checkPlain refuses such types before a reduction could run).
func fromBytes[T any](b []byte) []T {
	size := elemSize[T]()
	if size == 0 || len(b) < size {
		return nil
	}
	n := len(b) / size
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// elemSize returns T's size in bytes.
func elemSize[T any]() int {
	var x T
	return int(unsafe.Sizeof(x))
}

// checkPlain refuses an element type whose memory is not all of its value
// (a pointer, string, slice, map, interface, channel, function or bool
// anywhere in it): slices of it cannot move as memory. The answer is
// cached per type (plainType). It also refuses a type of size 0
// (struct{}, [0]int, [4]struct{} …): a message's element count is its
// byte count over the element size, which has no answer for such
// elements. Every typed call makes this check before anything else, so no later
// step divides by a size of 0.
func checkPlain[T any]() error {
	t := reflect.TypeFor[T]()
	if rawKind(t.Kind()) {
		return nil // a number: the common case, without the cache's lookup
	}
	if !plainType(t) {
		return fmt.Errorf("commtune: %s is not a plain type (numbers, and arrays and structs of them only), so its elements cannot move as memory; move such data with the value calls, which encode it", t)
	}
	if t.Size() == 0 {
		return fmt.Errorf("commtune: %s has size 0: elements of zero size cannot be counted in a message", t)
	}
	return nil
}

// rawKind reports whether values of kind k are numbers sent as memory.
func rawKind(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Complex128
}

// plainTypes caches plainType's answers.
var plainTypes sync.Map // reflect.Type → bool

// plainType reports whether t's values are their memory: numbers, and
// arrays and structs made of them only (no pointer, string, slice, map,
// interface or bool anywhere). Such values go as their bytes unless a
// codec or their own marshaller is asked for.
func plainType(t reflect.Type) bool {
	if v, ok := plainTypes.Load(t); ok {
		return v.(bool)
	}
	var plain func(t reflect.Type) bool
	plain = func(t reflect.Type) bool {
		switch {
		case rawKind(t.Kind()):
			return true
		case t.Kind() == reflect.Array:
			return plain(t.Elem())
		case t.Kind() == reflect.Struct:
			for i := 0; i < t.NumField(); i++ {
				if !plain(t.Field(i).Type) {
					return false
				}
			}
			return true
		}
		return false
	}
	p := plain(t)
	plainTypes.Store(t, p)
	return p
}
