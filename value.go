package commtune

import (
	"bytes"
	"context"
	"encoding"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"unsafe"
)

// Values: any Go value as a message. Each message is encoded on its own
// (so messages may match in any order) by the first of:
//
//   - numbers and slices of numbers (kinds int…complex128, named or not)
//     go as their memory, with no codec and no copy on the sending side;
//   - the codec given with WithCodec;
//   - encoding.BinaryMarshaler, when the value implements it (and the
//     receiver's *T implements encoding.BinaryUnmarshaler);
//   - plain values — arrays and structs of numbers only, and slices of
//     them — go as their memory, as numbers do (all ranks share byte
//     order and layout: one build of the program); a value of size 0
//     (struct{}, [0]int …) goes as no bytes, and a slice of them, whose
//     memory cannot say how many it holds, as its length;
//   - encoding/gob, the default for the rest.
//
// Sender and receiver must use the same type and the same codec. A message
// that does not decode is consumed and reported as an error wrapping
// ErrDecode that names its sender and tag; no other message is touched.

// ErrDecode is wrapped by the error of a value that does not decode.
var ErrDecode = errors.New("commtune: value does not decode")

// Codec encodes values into messages and decodes them.
type Codec interface {
	// Encode returns v's encoding.
	Encode(v any) ([]byte, error)
	// Decode decodes data into the value ptr points to.
	Decode(data []byte, ptr any) error
}

// GobCodec is encoding/gob, one self-contained stream per message (the
// default).
var GobCodec Codec = gobCodec{}

// JSONCodec is encoding/json.
var JSONCodec Codec = jsonCodec{}

type gobCodec struct{}

func (gobCodec) Encode(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (gobCodec) Decode(data []byte, ptr any) error {
	return gob.NewDecoder(bytes.NewReader(data)).Decode(ptr)
}

type jsonCodec struct{}

func (jsonCodec) Encode(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Decode(data []byte, ptr any) error { return json.Unmarshal(data, ptr) }

// ValueOption changes how values are encoded.
type ValueOption func(*valueConfig)

type valueConfig struct{ codec Codec }

// WithCodec encodes and decodes values with codec.
func WithCodec(codec Codec) ValueOption { return func(v *valueConfig) { v.codec = codec } }

func valueOptions(opts []ValueOption) valueConfig {
	var v valueConfig
	for _, o := range opts {
		if o != nil {
			o(&v)
		}
	}
	return v
}

// Encodings, by how a type goes.
const (
	asMemory      = iota // one value's bytes
	asMemorySlice        // a slice's elements' bytes
	asLength             // a slice of zero-size elements: its length, 8 bytes little-endian
	asCodec              // the codec's (or the value's own marshaller's)
)

// encodingOf says how T's values go under cfg.
func encodingOf[T any](cfg valueConfig) int {
	t := reflect.TypeFor[T]()
	switch {
	case rawKind(t.Kind()):
		return asMemory
	case t.Kind() == reflect.Slice && rawKind(t.Elem().Kind()):
		return asMemorySlice
	case cfg.codec != nil:
		return asCodec
	}
	var v T
	if _, ok := any(v).(encoding.BinaryMarshaler); ok {
		return asCodec
	}
	switch {
	case plainType(t):
		return asMemory
	case t.Kind() == reflect.Slice && plainType(t.Elem()) && t.Elem().Size() == 0:
		return asLength
	case t.Kind() == reflect.Slice && plainType(t.Elem()):
		return asMemorySlice
	}
	return asCodec
}

// encodeValue returns v's message; for a slice sent as memory it is v's
// own memory.
func encodeValue[T any](v T, cfg valueConfig) (msg []byte, err error) {
	t := reflect.TypeFor[T]()
	switch encodingOf[T](cfg) {
	case asMemory:
		b := make([]byte, t.Size())
		copy(b, unsafe.Slice((*byte)(unsafe.Pointer(&v)), t.Size()))
		return b, nil
	case asMemorySlice:
		rv := reflect.ValueOf(v)
		if rv.Len() == 0 {
			return nil, nil
		}
		return unsafe.Slice((*byte)(rv.UnsafePointer()), rv.Len()*int(t.Elem().Size())), nil
	case asLength:
		return binary.LittleEndian.AppendUint64(nil, uint64(reflect.ValueOf(v).Len())), nil
	case asCodec:
		if cfg.codec != nil {
			return cfg.codec.Encode(v)
		}
	}
	if m, ok := any(v).(encoding.BinaryMarshaler); ok {
		return m.MarshalBinary()
	}
	return GobCodec.Encode(v)
}

// decodeValue decodes msg into a T; from says where msg came from, for
// the error.
func decodeValue[T any](msg []byte, cfg valueConfig, from string) (T, error) {
	var v T
	t := reflect.TypeFor[T]()
	var err error
	switch encodingOf[T](cfg) {
	case asMemory:
		if len(msg) != int(t.Size()) {
			err = fmt.Errorf("%d bytes for a %d-byte value", len(msg), t.Size())
			break
		}
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), t.Size()), msg)
	case asMemorySlice:
		es := int(t.Elem().Size())
		if len(msg)%es != 0 {
			err = fmt.Errorf("%d bytes is not a whole number of %d-byte elements", len(msg), es)
			break
		}
		s := reflect.MakeSlice(t, len(msg)/es, len(msg)/es)
		if len(msg) > 0 {
			copy(unsafe.Slice((*byte)(s.UnsafePointer()), len(msg)), msg)
		}
		v = s.Interface().(T)
	case asLength:
		if len(msg) != 8 {
			err = fmt.Errorf("%d bytes for the length of a slice of zero-size elements, want 8", len(msg))
			break
		}
		n := binary.LittleEndian.Uint64(msg)
		if n > math.MaxInt {
			err = fmt.Errorf("length %d of a slice of zero-size elements is out of range", n)
			break
		}
		// No memory: the elements have none.
		v = reflect.MakeSlice(t, int(n), int(n)).Interface().(T)
	default:
		if cfg.codec != nil {
			err = cfg.codec.Decode(msg, &v)
		} else if u, ok := any(&v).(encoding.BinaryUnmarshaler); ok {
			err = u.UnmarshalBinary(msg)
		} else {
			err = GobCodec.Decode(msg, &v)
		}
	}
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%w: %T %s: %w", ErrDecode, v, from, err)
	}
	return v, nil
}

// isDecodeError reports whether err wraps ErrDecode.
func isDecodeError(err error) bool { return errors.Is(err, ErrDecode) }

// SendValue sends v to rank dest with tag, encoded as the package
// documentation of values says.
func SendValue[T any](ctx context.Context, c *Comm, v T, dest, tag int, opts ...ValueOption) error {
	msg, err := encodeValue(v, valueOptions(opts))
	if err != nil {
		return fmt.Errorf("commtune: encoding a %T: %w", v, err)
	}
	return c.Send(ctx, msg, dest, tag)
}

// RecvValue receives a value from src (or AnySource) with tag (or AnyTag),
// of whatever size its encoding has. A message that does not decode is
// consumed and returned as an error wrapping ErrDecode, with its Status.
func RecvValue[T any](ctx context.Context, c *Comm, src, tag int, opts ...ValueOption) (T, Status, error) {
	var zero T
	cfg := valueOptions(opts)
	if t := reflect.TypeFor[T](); encodingOf[T](cfg) == asMemorySlice {
		return recvRawSlice[T](ctx, c, src, tag, t)
	}
	msg, st, err := c.RecvBytes(ctx, src, tag)
	if err != nil {
		return zero, st, err
	}
	v, err := decodeValue[T](msg, cfg, fmt.Sprintf("from rank %d, tag %d", st.Source, st.Tag))
	return v, st, err
}

// recvRawSlice receives a slice of plain elements into a buffer made at
// the match, and views it as the slice: no decoding copy. The buffer is a
// byte allocation (aligned to 8 bytes or more, as Go's allocator gives
// every allocation of 8 bytes or more), fit for elements without pointers.
func recvRawSlice[T any](ctx context.Context, c *Comm, src, tag int, t reflect.Type) (T, Status, error) {
	var zero T
	buf, st, err := c.RecvBytes(ctx, src, tag)
	if err != nil {
		return zero, st, err
	}
	es := int(t.Elem().Size())
	if len(buf)%es != 0 || t.Elem().Align() > 8 {
		return zero, st, fmt.Errorf("%w: %s from rank %d, tag %d: %d bytes is not a whole number of %d-byte elements",
			ErrDecode, t, st.Source, st.Tag, len(buf), es)
	}
	if len(buf) == 0 {
		return reflect.MakeSlice(t, 0, 0).Interface().(T), st, nil
	}
	return reflect.SliceAt(t.Elem(), unsafe.Pointer(&buf[0]), len(buf)/es).Interface().(T), st, nil
}
