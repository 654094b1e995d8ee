package tcp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/commtune/commtune/internal/driver"
)

// errTruncated marks a connection that ended inside a frame. It is not a
// protocol violation: a peer that crashes mid-frame looks the same.
var errTruncated = errors.New("connection ended inside a frame")

// decoder reads frames from one connection and delivers them to the
// Handler. Its input is untrusted: it never panics, and it allocates only
// for a Packet body whose length it has checked against maxPacket. It has no
// I/O of its own beyond r so that fuzz tests can drive it with any bytes.
type decoder struct {
	r         *bufio.Reader
	h         driver.Handler
	peer      int
	maxPacket int // largest Packet body accepted (our Config.MaxPacket)

	hdr  [maxHeaderSize]byte
	body []byte // Packet bodies, reused; grows up to maxPacket
	bye  bool   // a Bye arrived: only EOF may follow
}

// newDecoder returns a decoder reading from r on behalf of peer.
func newDecoder(r io.Reader, h driver.Handler, peer, maxPacket int) *decoder {
	return &decoder{r: bufio.NewReaderSize(r, readBufferSize), h: h, peer: peer, maxPacket: maxPacket}
}

// next reads one frame, delivers it, and returns its kind. It returns io.EOF
// exactly when the stream ends cleanly between frames; any other error means
// the connection must be dropped (errors.Is(err, driver.ErrProtocol) for a
// peer that broke the protocol, errTruncated for a stream cut mid-frame).
func (d *decoder) next() (byte, error) {
	if _, err := io.ReadFull(d.r, d.hdr[:prefixSize]); err != nil {
		if err == io.EOF {
			return 0, io.EOF // between frames: a clean end of stream
		}
		return 0, readError(err, "frame header")
	}
	length := uint64(binary.LittleEndian.Uint32(d.hdr[0:4]))
	kind := d.hdr[4]
	// Bytes 5..7 are reserved: sent as zero, ignored here.
	if d.bye {
		return 0, driver.ProtocolError("frame of kind %d after Bye", kind)
	}
	switch kind {
	case kindPacket:
		if length < packetHeaderSize-lengthSize {
			return 0, driver.ProtocolError("Packet frame length %d, want at least %d", length, packetHeaderSize-lengthSize)
		}
		return kind, d.packet(length - (packetHeaderSize - lengthSize))
	case kindPut:
		if length < putHeaderSize-lengthSize {
			return 0, driver.ProtocolError("Put frame length %d, want at least %d", length, putHeaderSize-lengthSize)
		}
		return kind, d.put(length - (putHeaderSize - lengthSize))
	case kindBye:
		if length != byeSize-lengthSize {
			return 0, driver.ProtocolError("Bye frame length %d, want %d", length, byeSize-lengthSize)
		}
		d.bye = true
		return kind, nil
	default:
		return 0, driver.ProtocolError("unknown frame kind %d", kind)
	}
}

// packet reads an n-byte Packet body into the reused buffer and delivers it.
func (d *decoder) packet(n uint64) error {
	// Check before allocating: the length is the peer's word.
	if n > uint64(d.maxPacket) {
		return driver.ProtocolError("Packet of %d bytes exceeds MaxPacket %d", n, d.maxPacket)
	}
	if _, err := io.ReadFull(d.r, d.hdr[prefixSize:packetHeaderSize]); err != nil {
		return readError(err, "Packet header") // reserved u64, ignored
	}
	size := int(n)
	if cap(d.body) < size {
		// Double to amortize growth, but never past maxPacket.
		d.body = make([]byte, min(max(size, 2*cap(d.body)), d.maxPacket))
	}
	body := d.body[:size]
	if _, err := io.ReadFull(d.r, body); err != nil {
		return readError(err, "Packet body")
	}
	if err := d.h.Packet(d.peer, body); err != nil {
		return fmt.Errorf("%w: handler rejected a %d-byte Packet: %w", driver.ErrProtocol, size, err)
	}
	return nil
}

// put reads a Put's region and offset, asks the Handler where its n bytes
// land, and reads them straight there: no intermediate buffer beyond what
// bufio already holds (at most readBufferSize bytes).
func (d *decoder) put(n uint64) error {
	fields := d.hdr[prefixSize:putHeaderSize]
	if _, err := io.ReadFull(d.r, fields); err != nil {
		return readError(err, "Put header")
	}
	region := binary.LittleEndian.Uint64(fields[0:8])
	offset := binary.LittleEndian.Uint64(fields[8:16])
	if offset > math.MaxInt64 {
		return driver.ProtocolError("Put offset %d overflows int64", offset)
	}
	if n > math.MaxInt {
		return driver.ProtocolError("Put of %d bytes overflows int", n)
	}
	size := int(n)
	dst, err := d.h.Region(d.peer, region, int64(offset), size)
	if err != nil {
		return fmt.Errorf("%w: Put of %d bytes at offset %d of region %d: %w",
			driver.ErrProtocol, size, offset, region, err)
	}
	if len(dst) < size {
		return driver.ProtocolError("Region returned %d bytes for a %d-byte Put", len(dst), size)
	}
	if _, err := io.ReadFull(d.r, dst[:size]); err != nil {
		return readError(err, "Put payload")
	}
	d.h.PutDone(d.peer, region, int64(offset), size)
	return nil
}

// readError describes a read that failed inside a frame: an end of stream
// there is errTruncated, anything else (reset, closed) passes through.
func readError(err error, what string) error {
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return fmt.Errorf("%w: reading %s", errTruncated, what)
	default:
		return fmt.Errorf("reading %s: %w", what, err)
	}
}
