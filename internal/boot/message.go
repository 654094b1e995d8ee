package boot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Limits of the KVS (docs/kvs.md, "Limits").
const (
	// MaxKey is the longest key, in bytes.
	MaxKey = 1 << 10
	// MaxValue is the longest value, in bytes.
	MaxValue = 1 << 20
	// maxText bounds ABORT and ERR messages; longer ones are cut.
	maxText = 1 << 10
)

// op is a frame's operation code. Requests go client → server; replies
// (high bit set) go server → client and echo the request's id.
type op uint8

const (
	opHello  op = 0x01 // rank u32, size u32
	opPut    op = 0x02 // klen u16, key, vlen u32, value
	opGet    op = 0x03 // klen u16, key
	opFence  op = 0x04 // epoch u64
	opBye    op = 0x05 // (empty)
	opAbort  op = 0x06 // code i32, mlen u16, message
	opCancel op = 0x07 // (empty); id names the GET to forget; no reply
	opWatch  op = 0x08 // (empty); answered OK, then LOSTs under its id
	opOK     op = 0x81 // (empty)
	opValue  op = 0x82 // vlen u32, value
	opFenced op = 0x83 // epoch u64
	opErr    op = 0x84 // code u16, mlen u16, message
	opLost   op = 0x85 // rank u32; sent unasked, under the WATCH's id
)

var opNames = map[op]string{
	opHello: "HELLO", opPut: "PUT", opGet: "GET", opFence: "FENCE", opBye: "BYE",
	opAbort: "ABORT", opCancel: "CANCEL", opWatch: "WATCH", opOK: "OK", opValue: "VALUE",
	opFenced: "FENCED", opErr: "ERR", opLost: "LOST",
}

func (o op) String() string {
	if s, ok := opNames[o]; ok {
		return s
	}
	return fmt.Sprintf("op(0x%02x)", uint8(o))
}

func (o op) isReply() bool { return o&0x80 != 0 }

// Error codes carried by ERR replies, and the sentinel each maps to.
const (
	codeMalformed uint16 = 1 // the frame broke the protocol; the server closes
	codeRefused   uint16 = 2
	codeLimit     uint16 = 3
	codeConflict  uint16 = 4
	codeRankGone  uint16 = 5
)

var codeErrors = map[uint16]error{
	codeMalformed: ErrProtocol,
	codeRefused:   ErrRefused,
	codeLimit:     ErrLimit,
	codeConflict:  ErrConflict,
	codeRankGone:  ErrRankGone,
}

// Frame layout: a u32 length L (bytes after it), then op u8, id u32, body.
const (
	lenSize   = 4
	frameHead = 1 + 4 // op + id, counted in L
	// maxFrame is the largest L: a PUT of the longest key and value. The
	// reader checks L against it before allocating anything.
	maxFrame = frameHead + 2 + MaxKey + 4 + MaxValue
)

// message is one decoded frame. Only the fields of its op are meaningful.
type message struct {
	op    op
	id    uint32
	rank  uint32 // HELLO, LOST
	size  uint32 // HELLO
	key   string // PUT, GET
	value string // PUT, VALUE
	epoch uint64 // FENCE, FENCED
	code  int32  // ABORT: exit code; ERR: error code (u16 on the wire)
	text  string // ABORT, ERR
}

// appendFrame appends m's frame, length prefix included, to b. Fields are
// written as given; callers keep them within the limits (the server cuts
// texts, the client checks keys and values before sending).
func appendFrame(b []byte, m *message) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0, byte(m.op))
	b = binary.LittleEndian.AppendUint32(b, m.id)
	switch m.op {
	case opHello:
		b = binary.LittleEndian.AppendUint32(b, m.rank)
		b = binary.LittleEndian.AppendUint32(b, m.size)
	case opLost:
		b = binary.LittleEndian.AppendUint32(b, m.rank)
	case opPut:
		b = appendString16(b, m.key)
		b = appendString32(b, m.value)
	case opGet:
		b = appendString16(b, m.key)
	case opFence, opFenced:
		b = binary.LittleEndian.AppendUint64(b, m.epoch)
	case opAbort:
		b = binary.LittleEndian.AppendUint32(b, uint32(m.code))
		b = appendString16(b, m.text)
	case opValue:
		b = appendString32(b, m.value)
	case opErr:
		b = binary.LittleEndian.AppendUint16(b, uint16(m.code))
		b = appendString16(b, m.text)
	}
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-lenSize))
	return b
}

func appendString16(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendString32(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// errFrameSize is wrapped by readFrame when the length prefix is out of
// bounds: the stream cannot be resynchronised after it.
var errFrameSize = fmt.Errorf("%w: frame length out of bounds", ErrProtocol)

// readFrame reads one frame and returns what follows its length prefix, in
// buf if it is large enough (else in a new buffer of at most maxFrame
// bytes). The length is checked before anything is allocated.
func readFrame(r io.Reader, buf []byte) ([]byte, error) {
	var hdr [lenSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err // io.EOF between frames is a clean end
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n < frameHead || n > maxFrame {
		return nil, fmt.Errorf("%w: %d bytes, want %d..%d", errFrameSize, n, frameHead, maxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// decodeMessage parses a frame as returned by readFrame. Every length is
// checked against the bytes present; trailing bytes are an error, so each
// message has exactly one encoding. Strings are copied out of f.
func decodeMessage(f []byte) (message, error) {
	var m message
	if len(f) < frameHead {
		return m, fmt.Errorf("%w: frame of %d bytes is shorter than its header", ErrProtocol, len(f))
	}
	m.op = op(f[0])
	m.id = binary.LittleEndian.Uint32(f[1:])
	c := cursor{b: f[frameHead:]}
	switch m.op {
	case opHello:
		m.rank, m.size = c.u32(), c.u32()
	case opPut:
		m.key, m.value = c.string16(), c.string32()
	case opGet:
		m.key = c.string16()
	case opFence, opFenced:
		m.epoch = c.u64()
	case opLost:
		m.rank = c.u32()
	case opBye, opCancel, opWatch, opOK:
	case opAbort:
		m.code = int32(c.u32())
		m.text = c.string16()
	case opValue:
		m.value = c.string32()
	case opErr:
		m.code = int32(c.u16())
		m.text = c.string16()
	default:
		return m, fmt.Errorf("%w: unknown op 0x%02x", ErrProtocol, uint8(m.op))
	}
	if c.short {
		return m, fmt.Errorf("%w: %v body is truncated", ErrProtocol, m.op)
	}
	if len(c.b) != 0 {
		return m, fmt.Errorf("%w: %v body has %d trailing bytes", ErrProtocol, m.op, len(c.b))
	}
	return m, nil
}

// cursor reads little-endian fields from b; once a read runs past the end
// it sets short and every later read returns zero.
type cursor struct {
	b     []byte
	short bool
}

func (c *cursor) take(n int) []byte {
	if c.short || n > len(c.b) {
		c.short = true
		return nil
	}
	p := c.b[:n]
	c.b = c.b[n:]
	return p
}

func (c *cursor) u16() uint16 {
	if p := c.take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (c *cursor) u32() uint32 {
	if p := c.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (c *cursor) u64() uint64 {
	if p := c.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// string16 and string32 read a length-prefixed string; the length is
// checked against the bytes left before the copy.
func (c *cursor) string16() string { return string(c.take(int(c.u16()))) }

func (c *cursor) string32() string {
	n := c.u32()
	if uint64(n) > uint64(len(c.b)) {
		c.short = true
		return ""
	}
	return string(c.take(int(n)))
}
