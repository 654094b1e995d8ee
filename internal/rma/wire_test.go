package rma

import (
	"bytes"
	"strings"
	"testing"
)

// TestRequestRoundTrip: what encode writes, decodeRequest reads back,
// with the data that follows.
func TestRequestRoundTrip(t *testing.T) {
	cases := []struct {
		q    request
		data []byte
	}{
		{request{kind: kPut, elem: 8, tag: 7, offset: 16, length: 16}, bytes.Repeat([]byte{1}, 16)},
		{request{kind: kGet, elem: 4, tag: 1<<31 - 1, offset: 0, length: 64}, nil},
		{request{kind: kAcc, op: 1, elem: 8, offset: 8, length: 8}, make([]byte, 8)},
		{request{kind: kGetAcc, op: OpNoOp, elem: 2, offset: 2, length: 4}, make([]byte, 4)},
		{request{kind: kCAS, elem: 8, offset: 0, length: 8}, make([]byte, 16)},
		{request{kind: kLock, lock: Exclusive, tag: 3}, nil},
		{request{kind: kUnlock, lock: Shared, tag: 4}, nil},
		{request{kind: kFlush, tag: 5}, nil},
		{request{kind: kPutData, elem: 8, tag: 6, offset: 64, length: 64}, nil},
	}
	for _, tc := range cases {
		msg := append(tc.q.encode(make([]byte, headerLen)), tc.data...)
		q, data, err := decodeRequest(msg, 128, tc.q.elem)
		if err != nil {
			t.Fatalf("%+v: %v", tc.q, err)
		}
		if q.kind != tc.q.kind || q.tag != tc.q.tag || q.op != tc.q.op || q.lock != tc.q.lock {
			t.Errorf("%+v decoded as %+v", tc.q, q)
		}
		if q.kind != kLock && q.kind != kUnlock && q.kind != kFlush && (q.offset != tc.q.offset || q.length != tc.q.length) {
			t.Errorf("%+v: range %d+%d", tc.q, q.offset, q.length)
		}
		if !bytes.Equal(data, tc.data) {
			t.Errorf("%+v: data %v", tc.q, data)
		}
	}
}

// TestRequestRefused: every malformed field is an error naming it.
func TestRequestRefused(t *testing.T) {
	enc := func(q request, data int) []byte {
		return append(q.encode(make([]byte, headerLen)), make([]byte, data)...)
	}
	cases := []struct {
		name string
		msg  []byte
		want string
	}{
		{"short", make([]byte, 10), "header"},
		{"kind 0", enc(request{}, 0), "kind"},
		{"kind beyond", enc(request{kind: kindEnd}, 0), "kind"},
		{"element size", enc(request{kind: kPut, elem: 4, length: 8}, 8), "4-byte elements"},
		{"past the end", enc(request{kind: kPut, elem: 8, offset: 128, length: 8}, 8), "outside"},
		{"wraps", enc(request{kind: kGet, elem: 8, offset: 8, length: -8}, 0), "outside"},
		{"unaligned", enc(request{kind: kPut, elem: 8, offset: 4, length: 8}, 8), "outside"},
		{"short data", enc(request{kind: kPut, elem: 8, length: 16}, 8), "carries 8 bytes"},
		{"get with data", enc(request{kind: kGet, elem: 8, length: 8}, 8), "carries 8 bytes"},
		{"put-data with data", enc(request{kind: kPutData, elem: 8, length: 8}, 8), "carries 8 bytes"},
		{"cas of two", enc(request{kind: kCAS, elem: 8, length: 16}, 32), "compare-and-swap"},
		{"no operation", enc(request{kind: kAcc, elem: 8, length: 8}, 8), "operation"},
		{"lock kind", enc(request{kind: kLock, lock: 3}, 0), "lock of kind"},
		{"reserved", func() []byte { b := enc(request{kind: kFlush}, 0); b[30] = 1; return b }(), "reserved"},
	}
	for _, tc := range cases {
		_, _, err := decodeRequest(tc.msg, 128, 8)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// FuzzDecodeRequest: no input makes decodeRequest panic, and what it
// accepts lies inside the window.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(request{kind: kPut, elem: 8, length: 8}.encode(make([]byte, headerLen)), 64, 8)
	f.Add(request{kind: kCAS, elem: 4, length: 4}.encode(make([]byte, headerLen)), 16, 4)
	f.Add(request{kind: kLock, lock: Shared}.encode(make([]byte, headerLen)), 0, 1)
	f.Fuzz(func(t *testing.T, msg []byte, size, elem int) {
		if size < 0 || size > 1<<20 || elem < 1 || elem > 16 {
			return
		}
		q, data, err := decodeRequest(msg, size, elem)
		if err != nil {
			return
		}
		switch q.kind {
		case kLock, kUnlock, kFlush:
			return
		}
		if q.offset < 0 || q.length < 0 || q.offset+q.length > size {
			t.Fatalf("accepted %d+%d in a window of %d", q.offset, q.length, size)
		}
		if len(data) > len(msg) {
			t.Fatalf("data longer than the message")
		}
	})
}
