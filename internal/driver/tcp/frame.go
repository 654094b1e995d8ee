package tcp

import (
	"encoding/binary"
	"unsafe"

	"github.com/commtune/commtune/internal/driver"
)

// Frame kinds on the wire (docs/wire-tcp.md). Packet and Put share their
// values with driver.FrameKind; Bye exists only on the wire.
const (
	kindPacket = byte(driver.Packet)
	kindPut    = byte(driver.Put)
	kindBye    = 3
)

// Frame layout (docs/wire-tcp.md): an 8-byte prefix, u32 length | u8 kind |
// 3 reserved bytes, where length counts every byte after the length field;
// then 8 (Packet) or 16 (Put) bytes of kind-specific fields; then the
// payload.
//
// Headers are 16 bytes or more on purpose. Measured on this project's AMD
// EPYC VMs over loopback, a payload whose bytes start fewer than 16 bytes
// into the kernel's socket page fragment runs ping-pong at half the speed
// (64 KiB: ~100 µs instead of ~45 µs; 4 MiB: 3.8 ms instead of 2.2 ms):
// after a drained socket the kernel copies the frame to the fragment's
// start, so a page-aligned Go buffer behind a short header is copied to an
// address just above its own modulo 4 KiB, which stalls the copy (4K
// aliasing). A 16-byte Packet header costs 11 bytes per frame and avoids it.
const (
	// prefixSize is the length, kind and reserved bytes every frame starts with.
	prefixSize = 8
	// lengthSize is the part of the prefix that the length does not count.
	lengthSize = 4
	// packetHeaderSize is the prefix and a reserved u64.
	packetHeaderSize = prefixSize + 8
	// putHeaderSize is the prefix, a u64 region handle and a u64 offset.
	putHeaderSize = prefixSize + 16
	// byeSize is a whole Bye frame: the prefix alone.
	byeSize = prefixSize
	// maxHeaderSize is the longest header (a Put's).
	maxHeaderSize = putHeaderSize
	// defaultPutChunk is the most payload one Put frame carries; a longer
	// Put leaves as several frames at consecutive offsets. 1 GiB stays far
	// from the u32 limit and still makes the per-frame header negligible.
	defaultPutChunk = 1 << 30
	// readBufferSize is the reader's bufio size: large enough that small
	// frames cost one read(2) for many, small enough that payloads bigger
	// than it are read straight into their destination (bufio bypasses its
	// buffer for reads at least this long once the buffer is drained).
	readBufferSize = 64 << 10
)

// byeFrame is the whole Bye frame: length 4 (kind and reserved), kind Bye.
var byeFrame = [byeSize]byte{byeSize - lengthSize, 0, 0, 0, kindBye}

// header is a rail's scratch space for one frame header and its pad.
type header [maxHeaderSize + maxPad]byte

// packet writes a Packet header for an n-byte body followed by pad zero
// bytes and returns it. n <= MaxMaxPacket, so the length cannot overflow.
func (b *header) packet(n, pad int) []byte {
	*b = header{}
	binary.LittleEndian.PutUint32(b[0:4], uint32(packetHeaderSize-lengthSize+pad+n))
	b[4] = kindPacket
	b[5] = byte(pad)
	return b[:packetHeaderSize+pad]
}

// put writes a Put header for n bytes at offset of region followed by pad
// zero bytes and returns it. n <= the Put chunk size, so the length cannot
// overflow.
func (b *header) put(region uint64, offset int64, n, pad int) []byte {
	*b = header{}
	binary.LittleEndian.PutUint32(b[0:4], uint32(putHeaderSize-lengthSize+pad+n))
	b[4] = kindPut
	b[5] = byte(pad)
	binary.LittleEndian.PutUint64(b[8:16], region)
	binary.LittleEndian.PutUint64(b[16:24], uint64(offset))
	return b[:putHeaderSize+pad]
}

// Pad: zero bytes between a frame's header and its payload, chosen so that
// a large payload does not land 1–63 bytes past its own page offset in the
// kernel's socket pages. After a drained socket the kernel copies a frame
// to the start of a page fragment, so the payload's offset there is the
// number of frame bytes before it; when that is just above the user
// buffer's offset in its page, every load of the kernel's copy aliases a
// store it just made (4K aliasing) and the copy runs up to twice as slow.
// Measured here on 4 MiB loopback ping-pong: 8 or 24 header bytes ran
// 0.95–2.4 ms per message, 64 to 4096 bytes (and none) 0.72–0.80 ms.
const (
	maxPad        = 63
	aliasWindow   = 64       // the distances (mod 4 KiB) that stall the copy: 1..63
	padMinPayload = 16 << 10 // smaller payloads are not worth a thought
)

// padFor returns the pad for a payload preceded by before bytes of the
// frame (header and any earlier parts): the least that moves the distance
// between payload's page offset and its offset in the frame out of the
// aliasing window.
func padFor(before int, payload []byte) int {
	if len(payload) < padMinPayload {
		return 0
	}
	addr := int(uintptr(unsafe.Pointer(unsafe.SliceData(payload))) & 4095)
	d := (before - addr) & 4095
	if d == 0 || d >= aliasWindow {
		return 0
	}
	return aliasWindow - d
}
