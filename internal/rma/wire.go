package rma

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A request to a target's agent is one message on the window's request
// context: a 32-byte header, then the operation's data. All integers are
// little-endian.
//
//	byte 0      kind (kPut … kPutData)
//	byte 1      accumulate operation (OpCode), 0 otherwise
//	byte 2      lock kind (Shared, Exclusive) for kLock and kUnlock
//	byte 3      element size in bytes (must be the window's)
//	bytes 4–7   reply tag (the origin receives the answer with it)
//	bytes 8–15  offset in the target's window, bytes
//	bytes 16–23 length, bytes, of the target range
//	bytes 24–31 zero
//
// Data: kPut, kAcc and kGetAcc carry length bytes to combine; kCAS carries
// the compare value then the swap value (one element each). kPutData is a
// put whose length bytes follow in a message of their own, on the reply
// context from the origin to the target with the reply tag, which the
// agent receives straight into the window (no copy through a buffer). Replies
// (kGet, kGetAcc, kCAS, kLock, kUnlock, kFlush) go to the origin on the
// window's reply context with the reply tag: one status byte (0 ok, 1
// error) followed by the fetched bytes, or by the error's text.
const headerLen = 32

// Request kinds.
const (
	kPut byte = iota + 1
	kGet
	kAcc
	kGetAcc
	kCAS
	kLock
	kUnlock
	kFlush
	kPutData
	kindEnd
)

var kindNames = [...]string{"", "put", "get", "accumulate", "get-accumulate", "compare-and-swap", "lock", "unlock", "flush", "put"}

// request is a decoded request header.
type request struct {
	kind   byte
	op     OpCode
	lock   LockKind
	elem   int
	tag    int
	offset int
	length int
}

func (q request) encode(b []byte) []byte {
	b = b[:headerLen]
	clear(b)
	b[0], b[1], b[2], b[3] = q.kind, byte(q.op), byte(q.lock), byte(q.elem)
	binary.LittleEndian.PutUint32(b[4:], uint32(q.tag))
	binary.LittleEndian.PutUint64(b[8:], uint64(q.offset))
	binary.LittleEndian.PutUint64(b[16:], uint64(q.length))
	return b
}

// errBadRequest is what a malformed request fails with.
var errBadRequest = errors.New("rma: malformed request")

// decodeRequest checks msg's header against a window of size bytes with
// elements of elem bytes and returns it with its data. Nothing in msg is
// trusted: every field is checked before use.
func decodeRequest(msg []byte, size, elem int) (request, []byte, error) {
	if len(msg) < headerLen {
		return request{}, nil, fmt.Errorf("%w: %d bytes, header is %d", errBadRequest, len(msg), headerLen)
	}
	q := request{kind: msg[0], op: OpCode(msg[1]), lock: LockKind(msg[2]), elem: int(msg[3])}
	tag := binary.LittleEndian.Uint32(msg[4:])
	off := binary.LittleEndian.Uint64(msg[8:])
	n := binary.LittleEndian.Uint64(msg[16:])
	data := msg[headerLen:]
	if q.kind == 0 || q.kind >= kindEnd {
		return q, nil, fmt.Errorf("%w: kind %d", errBadRequest, q.kind)
	}
	if tag > 1<<31-1 || binary.LittleEndian.Uint64(msg[24:]) != 0 {
		return q, nil, fmt.Errorf("%w: reserved bits set", errBadRequest)
	}
	q.tag = int(tag)
	name := kindNames[q.kind]
	switch q.kind {
	case kLock, kUnlock:
		if q.lock != Shared && q.lock != Exclusive {
			return q, nil, fmt.Errorf("%w: %s of kind %d", errBadRequest, name, q.lock)
		}
		return q, nil, nil
	case kFlush:
		return q, nil, nil
	}
	if q.elem != elem {
		return q, nil, fmt.Errorf("rma: %s of %d-byte elements into a window of %d-byte elements", name, q.elem, elem)
	}
	if off > uint64(size) || n > uint64(size)-off || n%uint64(elem) != 0 || off%uint64(elem) != 0 {
		return q, nil, fmt.Errorf("rma: %s of %d bytes at byte %d outside a %d-byte window", name, n, off, size)
	}
	q.offset, q.length = int(off), int(n)
	want := q.length
	switch q.kind {
	case kGet, kPutData:
		want = 0
	case kCAS:
		if q.length != elem {
			return q, nil, fmt.Errorf("%w: compare-and-swap of %d bytes", errBadRequest, q.length)
		}
		want = 2 * elem
	}
	if q.kind == kAcc || q.kind == kGetAcc {
		if q.op == 0 || (q.op >= kindOpLimit && q.op != OpReplace && q.op != OpNoOp) {
			return q, nil, fmt.Errorf("%w: operation %d", errBadRequest, q.op)
		}
	}
	if len(data) != want {
		return q, nil, fmt.Errorf("%w: %s carries %d bytes of data, want %d", errBadRequest, name, len(data), want)
	}
	return q, data, nil
}

// kindOpLimit bounds the reduction codes a request may name; Kernel
// rejects those that do not apply to the window's elements.
const kindOpLimit = 0x40
