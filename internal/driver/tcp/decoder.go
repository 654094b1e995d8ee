package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/commtune/commtune/internal/driver"
)

// errTruncated marks a connection that ended inside a frame. It is not a
// protocol violation: a peer that crashes mid-frame looks the same.
var errTruncated = errors.New("connection ended inside a frame")

// errWouldBlock is what a source returns when no byte is available now.
var errWouldBlock = errors.New("no data available now")

// source reads into p: n > 0 bytes, or errWouldBlock, io.EOF or another
// error. The rail's source is a non-blocking read(2); tests use readers.
type source func(p []byte) (int, error)

// decoder is an incremental frame parser. It is fed by whoever holds the
// rail's read lock — the reader goroutine after the netpoller says the
// socket is readable, or a goroutine waiting for a message that polls —
// and consumes input until the source would block, so that a frame may be
// begun by one and finished by the other. Its input is untrusted: it never
// panics, and it allocates only for a Packet body whose length it has
// checked against maxPacket.
type decoder struct {
	h         driver.Handler
	peer      int
	maxPacket int    // largest Packet body accepted (our Config.MaxPacket)
	onBye     func() // called when a Bye frame arrives

	buf  []byte // staging for headers and small payloads
	r, w int    // unread bytes are buf[r:w]

	hdr  [maxHeaderSize + maxPad]byte
	have int // header bytes collected
	need int // header bytes wanted: the prefix, then the whole header

	inPayload bool
	kind      byte
	region    uint64
	offset    int64
	dst       []byte // where the payload goes: the Packet buffer or a piece of a Put region
	filled    int
	putLen    int // Put: the payload's length
	placed    int // Put: payload bytes in the region's earlier pieces

	body []byte  // Packet bodies up to keptBody, reused
	big  *[]byte // the body of a larger Packet, pooled: back to bigBodies once delivered
	bye  bool    // a Bye arrived: only EOF may follow
	err  error   // sticky: the stream is over (io.EOF) or broken
}

// keptBody is the largest Packet body a connection keeps a buffer for
// between frames. A larger one (an aggregate of eager messages, up to
// maxPacket) takes a pooled buffer it gives back once delivered: a buffer
// kept at the size of the largest Packet ever seen grew, connection by
// connection, as rarer sizes came, and stayed resident (8 ranks over TCP
// for 30 minutes: 181 to 197 MiB of RSS in all).
const keptBody = 64 << 10

// bigBodies holds buffers for Packets larger than keptBody; the garbage
// collector empties it when they go unused.
var bigBodies sync.Pool

// getBigBody returns a pooled buffer of at least size bytes.
func getBigBody(size int) *[]byte {
	if b, ok := bigBodies.Get().(*[]byte); ok && cap(*b) >= size {
		return b
	}
	b := make([]byte, size)
	return &b
}

// directReadMin is the payload remainder from which the decoder reads
// straight into the destination instead of staging: large payloads are
// copied once, by the kernel.
const directReadMin = readBufferSize / 4

// newDecoder returns a decoder delivering to h on behalf of peer.
func newDecoder(h driver.Handler, peer, maxPacket int) *decoder {
	return &decoder{h: h, peer: peer, maxPacket: maxPacket, buf: make([]byte, readBufferSize), need: prefixSize}
}

// run parses and delivers frames until src would block (it returns nil
// then) or the stream ends: io.EOF exactly when it ended cleanly between
// frames; any other error means the connection must be dropped
// (driver.ErrProtocol for a peer that broke the protocol, errTruncated for
// a stream cut inside a frame). The end is sticky. progress reports whether
// any byte was consumed: a waiting goroutine keeps polling while data
// flows, even inside one large frame.
func (d *decoder) run(src source) (progress bool, err error) {
	if d.err != nil {
		return false, d.err
	}
	for {
		if !d.inPayload {
			if d.have < d.need {
				if d.r == d.w {
					if err := d.fill(src); err != nil {
						return progress, d.end(err)
					}
					progress = true
				}
				n := copy(d.hdr[d.have:d.need], d.buf[d.r:d.w])
				d.r += n
				d.have += n
				continue
			}
			if err := d.header(); err != nil {
				d.err = err
				return progress, err
			}
			continue
		}
		for d.filled < len(d.dst) {
			if d.r < d.w {
				n := copy(d.dst[d.filled:], d.buf[d.r:d.w])
				d.r += n
				d.filled += n
				continue
			}
			if len(d.dst)-d.filled >= directReadMin {
				n, err := src(d.dst[d.filled:])
				d.filled += n
				if err != nil {
					return progress, d.end(err)
				}
				progress = true
				continue
			}
			if err := d.fill(src); err != nil {
				return progress, d.end(err)
			}
			progress = true
		}
		if d.kind == kindPut {
			// The piece is full; the region may have more pieces for the
			// rest of the payload.
			d.placed += len(d.dst)
			if d.placed < d.putLen {
				if err := d.nextPiece(); err != nil {
					d.err = err
					return progress, err
				}
				continue
			}
		}
		if err := d.deliver(); err != nil {
			d.err = err
			return progress, err
		}
	}
}

// fill reads into the empty staging buffer.
func (d *decoder) fill(src source) error {
	d.r, d.w = 0, 0
	n, err := src(d.buf)
	d.w = n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// end records why reading stopped: would-block is not an end.
func (d *decoder) end(err error) error {
	switch {
	case err == errWouldBlock:
		return nil
	case err == io.EOF && !d.inPayload && d.have == 0:
		d.err = io.EOF // between frames: a clean end of stream
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		d.err = errTruncated
	default:
		d.err = err
	}
	return d.err
}

// header handles a complete prefix (deciding how much header follows) or a
// complete header (deciding where the payload goes).
func (d *decoder) header() error {
	if d.need == prefixSize {
		length := uint64(binary.LittleEndian.Uint32(d.hdr[0:4]))
		d.kind = d.hdr[4]
		pad := uint64(d.hdr[5])
		// Bytes 6..7 are reserved: sent as zero, ignored here.
		if pad > maxPad {
			return driver.ProtocolError("frame pad %d exceeds %d", pad, maxPad)
		}
		if d.bye {
			return driver.ProtocolError("frame of kind %d after Bye", d.kind)
		}
		switch d.kind {
		case kindPacket:
			if length < packetHeaderSize-lengthSize+pad {
				return driver.ProtocolError("Packet frame length %d, want at least %d", length, packetHeaderSize-lengthSize+pad)
			}
			n := length - (packetHeaderSize - lengthSize) - pad
			// Check before allocating: the length is the peer's word.
			if n > uint64(d.maxPacket) {
				return driver.ProtocolError("Packet of %d bytes exceeds MaxPacket %d", n, d.maxPacket)
			}
			d.need = packetHeaderSize + int(pad)
			d.filled = int(n) // payload length, until the header is complete
		case kindPut:
			if length < putHeaderSize-lengthSize+pad {
				return driver.ProtocolError("Put frame length %d, want at least %d", length, putHeaderSize-lengthSize+pad)
			}
			n := length - (putHeaderSize - lengthSize) - pad
			if n > math.MaxInt32 {
				return driver.ProtocolError("Put of %d bytes overflows int", n)
			}
			d.need = putHeaderSize + int(pad)
			d.filled = int(n)
		case kindBye:
			if length != byeSize-lengthSize || pad != 0 {
				return driver.ProtocolError("Bye frame length %d, want %d", length, byeSize-lengthSize)
			}
			d.bye = true
			d.have, d.need = 0, prefixSize
			if d.onBye != nil {
				d.onBye()
			}
			return nil
		default:
			return driver.ProtocolError("unknown frame kind %d", d.kind)
		}
		return nil
	}
	size := d.filled
	d.filled = 0
	switch d.kind {
	case kindPacket:
		// The reserved u64 after the prefix is ignored.
		if size > keptBody {
			d.big = getBigBody(size)
			d.dst = (*d.big)[:size]
			break
		}
		if cap(d.body) < size {
			// Double to amortize growth, but never past keptBody.
			d.body = make([]byte, min(max(size, 2*cap(d.body)), keptBody))
		}
		d.dst = d.body[:size]
	case kindPut:
		fields := d.hdr[prefixSize:putHeaderSize]
		d.region = binary.LittleEndian.Uint64(fields[0:8])
		offset := binary.LittleEndian.Uint64(fields[8:16])
		if offset > math.MaxInt64 {
			return driver.ProtocolError("Put offset %d overflows int64", offset)
		}
		d.offset = int64(offset)
		d.putLen, d.placed = size, 0
		if err := d.nextPiece(); err != nil {
			return err
		}
	}
	d.inPayload = true
	return nil
}

// nextPiece asks the Handler where the Put's next bytes land: the region
// may hand out its memory in pieces (driver.Handler.Region), each filled in
// turn as the payload arrives.
func (d *decoder) nextPiece() error {
	at, rest := d.offset+int64(d.placed), d.putLen-d.placed
	dst, err := d.h.Region(d.peer, d.region, at, rest)
	if err != nil {
		return fmt.Errorf("%w: Put of %d bytes at offset %d of region %d: %w",
			driver.ErrProtocol, d.putLen, d.offset, d.region, err)
	}
	if rest > 0 && len(dst) == 0 {
		return driver.ProtocolError("Region returned no room at offset %d for the last %d bytes of a %d-byte Put", at, rest, d.putLen)
	}
	d.dst, d.filled = dst[:min(len(dst), rest)], 0
	return nil
}

// deliver hands a complete frame to the Handler and resets for the next.
func (d *decoder) deliver() error {
	dst := d.dst
	d.inPayload, d.dst, d.filled = false, nil, 0
	d.have, d.need = 0, prefixSize
	switch d.kind {
	case kindPacket:
		err := d.h.Packet(d.peer, dst)
		if d.big != nil {
			bigBodies.Put(d.big) // the handler keeps no part of a body
			d.big = nil
		}
		if err != nil {
			return fmt.Errorf("%w: handler rejected a %d-byte Packet: %w", driver.ErrProtocol, len(dst), err)
		}
	case kindPut:
		d.h.PutDone(d.peer, d.region, d.offset, d.putLen)
	}
	return nil
}
