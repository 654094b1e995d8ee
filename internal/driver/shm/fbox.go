package shm

import (
	"sync/atomic"
	"unsafe"

	"github.com/commtune/commtune/internal/driver"
)

// A fast box is a small second ring per pair for small messages written at
// once (rail.SendNow), in the upper half of the ring's header page
// (docs/wire-shm.md, "Fast box"). It is made of 64-byte lines, each
// starting with a stamp that says which lap of the box wrote it, so the
// consumer learns that a record is there by loading the line that holds
// it: one cache-line transfer brings both the news and the message, where
// the ring's separate tail word costs one more. And 2 KiB stay in cache,
// where successive small records walk through the whole ring.
const (
	fboxOff     = pageSize / 2 // in the ring header page
	fboxSize    = pageSize / 2
	fboxLine    = 64
	fboxHdr     = 8 // u32 stamp, u16 length, u8 lines, u8 flags
	fboxPayload = fboxLine - fboxHdr
	// fboxMaxLines bounds a record: a quarter of the box, so that small
	// messages keep flowing while one waits for room.
	fboxMaxLines = fboxSize / fboxLine / 4
	// FboxMax is the largest body a fast box record carries.
	FboxMax = fboxMaxLines * fboxPayload

	fboxSkip = 1 // flag: the rest of the box is unused this lap
)

// fbox is one process's view of a fast box. The producer owns tail, the
// consumer head (published in the ring header); positions are byte counts
// that only grow, in whole lines.
type fbox struct {
	data []byte
	head *atomic.Uint64

	// producer side (callers serialize: the scheduler's lock of the peer)
	ptail, cachedHead uint64
	// consumer side (under the inRing's lock)
	chead uint64
	buf   [FboxMax]byte
}

func newFbox(hdr []byte) *fbox {
	f := &fbox{
		data: hdr[fboxOff : fboxOff+fboxSize],
		head: (*atomic.Uint64)(unsafe.Pointer(&hdr[ringFboxHead])),
	}
	f.ptail, f.cachedHead, f.chead = f.head.Load(), f.head.Load(), f.head.Load()
	return f
}

// stampOf is the stamp of the line at position pos: nonzero, so a box
// never written holds none, and different on every lap for 2^32 lines.
func stampOf(pos uint64) uint32 { return uint32(pos/fboxLine) + 1 }

func (f *fbox) stamp(off uint64) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&f.data[off]))
}

// write copies head and body into one record and publishes it; false when
// the record is too large for a fast box or the box lacks room now.
func (f *fbox) write(head, body []byte) bool {
	n := len(head) + len(body)
	lines := uint64((n + fboxPayload - 1) / fboxPayload)
	if n == 0 || lines > fboxMaxLines {
		return false
	}
	pos := f.ptail % fboxSize
	skip := uint64(0)
	if pos+lines*fboxLine > fboxSize {
		skip = fboxSize - pos
	}
	if f.ptail+skip+lines*fboxLine-f.cachedHead > fboxSize {
		f.cachedHead = f.head.Load()
		if f.ptail+skip+lines*fboxLine-f.cachedHead > fboxSize {
			return false
		}
	}
	if skip > 0 {
		// Every skipped line gets this lap's stamp, so that no line keeps
		// one old enough to come round again; the first goes last, as it
		// is the one the consumer reads.
		for off := pos + fboxLine; off < fboxSize; off += fboxLine {
			f.data[off+7] = fboxSkip
			f.stamp(off).Store(stampOf(f.ptail + off - pos))
		}
		f.data[pos+7] = fboxSkip
		f.stamp(pos).Store(stampOf(f.ptail))
		f.ptail += skip
		pos = 0
	}
	// Lines after the first, then the first, whose stamp publishes all.
	src, part := head, 0
	fill := func(off uint64) {
		dst := f.data[off+fboxHdr : off+fboxLine]
		for len(dst) > 0 && part < 2 {
			k := copy(dst, src)
			dst, src = dst[k:], src[k:]
			if len(src) == 0 {
				src, part = body, part+1
			}
		}
	}
	fill(pos)
	for i := uint64(1); i < lines; i++ {
		off := pos + i*fboxLine
		fill(off)
		f.data[off+7] = 0
		f.stamp(off).Store(stampOf(f.ptail + i*fboxLine))
	}
	le.PutUint16(f.data[pos+4:], uint16(n))
	f.data[pos+6], f.data[pos+7] = byte(lines), 0
	f.stamp(pos).Store(stampOf(f.ptail))
	f.ptail += lines * fboxLine
	return true
}

// next returns the body of the record at the head, or nil when there is
// none, consuming skip lines on the way; release consumes the record. A
// record that breaks the format is a protocol error. A body of several
// lines is gathered into f.buf, valid until the next call.
func (f *fbox) next() (body []byte, lines uint64, err error) {
	for {
		pos := f.chead % fboxSize
		if f.stamp(pos).Load() != stampOf(f.chead) {
			return nil, 0, nil
		}
		if f.data[pos+7]&fboxSkip != 0 {
			if pos == 0 {
				return nil, 0, driver.ProtocolError("shm fast box: skip line at the start of the box")
			}
			f.advance(fboxSize - pos)
			continue
		}
		n := int(le.Uint16(f.data[pos+4:]))
		lines = uint64(f.data[pos+6])
		if n == 0 || lines == 0 || lines > fboxMaxLines || pos+lines*fboxLine > fboxSize ||
			n > int(lines)*fboxPayload || n <= int(lines-1)*fboxPayload {
			return nil, 0, driver.ProtocolError("shm fast box: record of %d bytes in %d lines at %d", n, lines, pos)
		}
		if lines == 1 {
			return f.data[pos+fboxHdr : pos+fboxHdr+uint64(n)], 1, nil
		}
		out := f.buf[:0]
		for i := uint64(0); i < lines; i++ {
			off := pos + i*fboxLine
			out = append(out, f.data[off+fboxHdr:off+fboxHdr+uint64(min(fboxPayload, n-len(out)))]...)
		}
		return out, lines, nil
	}
}

// release consumes the record of the given lines that next returned.
func (f *fbox) release(lines uint64) { f.advance(lines * fboxLine) }

func (f *fbox) advance(n uint64) {
	f.chead += n
	f.head.Store(f.chead)
}

// pending reports whether a record (or skip line) waits at the published
// head; any goroutine may ask, while another consumes (a record being
// consumed may still count).
func (f *fbox) pending() bool {
	h := f.head.Load()
	return f.stamp(h%fboxSize).Load() == stampOf(h)
}
