package boot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// sampleMessages has one message of every op, with fields at their edges.
func sampleMessages() map[string]message {
	return map[string]message{
		"hello":         {op: opHello, id: 1, rank: 3, size: 8},
		"put":           {op: opPut, id: 2, key: "addr/3", value: "10.0.0.3:4000"},
		"put empty val": {op: opPut, id: 3, key: "k", value: ""},
		"put max":       {op: opPut, id: 4, key: strings.Repeat("k", MaxKey), value: strings.Repeat("v", MaxValue)},
		"get":           {op: opGet, id: 5, key: "addr/0"},
		"fence":         {op: opFence, id: 6, epoch: 1<<64 - 1},
		"bye":           {op: opBye, id: 7},
		"abort":         {op: opAbort, id: 8, code: -3, text: "out of memory"},
		"cancel":        {op: opCancel, id: 9},
		"watch":         {op: opWatch, id: 13},
		"lost":          {op: opLost, id: 13, rank: 1<<32 - 1},
		"ok":            {op: opOK, id: 10},
		"value":         {op: opValue, id: 11, value: "x\x00y"},
		"fenced":        {op: opFenced, id: 12, epoch: 2},
		"err":           {op: opErr, id: 0xffffffff, code: int32(codeLimit), text: "store full"},
	}
}

func TestMessageRoundTrip(t *testing.T) {
	for name, m := range sampleMessages() {
		t.Run(name, func(t *testing.T) {
			frame := appendFrame(nil, &m)
			f, err := readFrame(bytes.NewReader(frame), nil)
			if err != nil {
				t.Fatalf("readFrame: %v", err)
			}
			got, err := decodeMessage(f)
			if err != nil {
				t.Fatalf("decodeMessage: %v", err)
			}
			if got != m {
				t.Fatalf("round trip changed the message:\n got %+v\nwant %+v", got, m)
			}
		})
	}
}

// body builds what follows a frame's length prefix.
func body(o op, id uint32, rest ...byte) []byte {
	b := []byte{byte(o)}
	b = binary.LittleEndian.AppendUint32(b, id)
	return append(b, rest...)
}

func TestDecodeMalformed(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte
		want  string
	}{
		{"empty", nil, "shorter than its header"},
		{"header cut", []byte{byte(opGet), 1, 0}, "shorter than its header"},
		{"unknown op", body(0x42, 1), "unknown op 0x42"},
		{"zero op", body(0, 1), "unknown op"},
		{"hello short", body(opHello, 1, 1, 0, 0, 0), "truncated"},
		{"hello trailing", body(opHello, 1, 0, 0, 0, 0, 1, 0, 0, 0, 9), "1 trailing"},
		{"put key past end", body(opPut, 1, 5, 0, 'a', 'b'), "truncated"},
		{"put no value length", body(opPut, 1, 1, 0, 'a'), "truncated"},
		{"put value past end", body(opPut, 1, 1, 0, 'a', 3, 0, 0, 0, 'x'), "truncated"},
		{"put value length huge", body(opPut, 1, 1, 0, 'a', 0xff, 0xff, 0xff, 0xff), "truncated"},
		{"get trailing", body(opGet, 1, 1, 0, 'a', 'b'), "1 trailing"},
		{"fence short", body(opFence, 1, 1, 2, 3), "truncated"},
		{"bye trailing", body(opBye, 1, 0), "1 trailing"},
		{"abort message past end", body(opAbort, 1, 1, 0, 0, 0, 9, 0, 'x'), "truncated"},
		{"err short", body(opErr, 1, 1), "truncated"},
		{"value length past end", body(opValue, 1, 2, 0, 0, 0, 'x'), "truncated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeMessage(tc.frame)
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("err = %v, want ErrProtocol", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %q, want it to say %q", err, tc.want)
			}
		})
	}
}

func TestReadFrameBounds(t *testing.T) {
	prefix := func(n uint32, rest ...byte) []byte {
		return append(binary.LittleEndian.AppendUint32(nil, n), rest...)
	}
	tests := []struct {
		name  string
		input []byte
		want  error
	}{
		{"clean end", nil, io.EOF},
		{"length cut", []byte{5, 0}, io.ErrUnexpectedEOF},
		{"length zero", prefix(0), ErrProtocol},
		{"length below header", prefix(frameHead - 1), ErrProtocol},
		{"length above max", prefix(maxFrame + 1), ErrProtocol},
		{"length 4 GiB", prefix(0xffffffff), ErrProtocol},
		{"body cut", prefix(9, byte(opGet), 1, 0), io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := readFrame(bytes.NewReader(tc.input), make([]byte, 16))
			if !errors.Is(err, tc.want) {
				t.Fatalf("readFrame = %q, %v; want %v", f, err, tc.want)
			}
		})
	}
}

// TestReadFrameNoAllocFromLength checks that a hostile length allocates
// no buffer: the bound is checked before the buffer is made. It counts
// bytes, not allocations, so the error's own text does not matter.
func TestReadFrameNoAllocFromLength(t *testing.T) {
	input := binary.LittleEndian.AppendUint32(nil, maxFrame+1)
	r := bytes.NewReader(input)
	const runs = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		r.Reset(input)
		readFrame(r, nil)
	}
	runtime.ReadMemStats(&after)
	if perRun := (after.TotalAlloc - before.TotalAlloc) / runs; perRun > 4096 {
		t.Fatalf("readFrame of an oversized length allocated %d bytes per call", perRun)
	}
}
