package commtune

import (
	"context"
	"fmt"
	"unsafe"
)

// Number is the set of element types the typed helpers move: fixed-size
// numeric types whose memory can be sent as bytes. All ranks must share
// byte order (every platform commtune runs on is little-endian).
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr |
		~float32 | ~float64 | ~complex64 | ~complex128
}

// Bytes views s's memory as bytes, without copying.
func Bytes[T Number](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// Count returns the number of T elements a Status's byte count holds.
func Count[T Number](st Status) int {
	var x T
	return st.Count / int(unsafe.Sizeof(x))
}

// SendSlice sends s to dest with tag, like Send on its bytes.
func SendSlice[T Number](ctx context.Context, c *Comm, s []T, dest, tag int) error {
	return c.Send(ctx, Bytes(s), dest, tag)
}

// RecvSlice receives into s from src with tag, like Recv on its bytes; it
// fails if the message is not a whole number of elements.
func RecvSlice[T Number](ctx context.Context, c *Comm, s []T, src, tag int) (Status, error) {
	st, err := c.Recv(ctx, Bytes(s), src, tag)
	if err == nil {
		err = checkElems[T](st)
	}
	return st, err
}

// IsendSlice starts sending s to dest with tag.
func IsendSlice[T Number](c *Comm, s []T, dest, tag int) (*Request, error) {
	return c.Isend(Bytes(s), dest, tag)
}

// IrecvSlice starts receiving into s from src with tag.
func IrecvSlice[T Number](c *Comm, s []T, src, tag int) (*Request, error) {
	return c.Irecv(Bytes(s), src, tag)
}

func checkElems[T Number](st Status) error {
	var x T
	if size := int(unsafe.Sizeof(x)); st.Count%size != 0 {
		return fmt.Errorf("commtune: received %d bytes from rank %d, not a whole number of %d-byte elements", st.Count, st.Source, size)
	}
	return nil
}

// fromBytes views b as T elements, without copying; b must be aligned for
// T (it comes from a []T or from coll's scratch, at multiples of T's
// size).
func fromBytes[T Number](b []byte) []T {
	var x T
	n := len(b) / int(unsafe.Sizeof(x))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// elemSize returns T's size in bytes.
func elemSize[T Number]() int {
	var x T
	return int(unsafe.Sizeof(x))
}
