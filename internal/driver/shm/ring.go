package shm

import (
	"encoding/binary"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/commtune/commtune/internal/driver"
)

// Records in a ring (docs/wire-shm.md): a 16-byte header — u32 length of
// the whole record, u8 kind, u8 pad, u16 reserved, u64 aux — then the
// kind's fields and body. Records start on 16-byte boundaries and never
// wrap: one that does not fit before the end is preceded by a wrap record
// filling the rest.
const (
	recHeader  = 16
	recAlign   = 16
	putFields  = 8  // offset; the region handle is in aux
	payloadAln = 64 // Put payloads start on a cache line (pad bytes before)

	kindPacket  = 1 // body: opaque core entries
	kindPut     = 2 // aux: region; u64 offset; pad; payload
	kindWrap    = 3 // skip to the start of the ring
	kindBye     = 4 // the sender finalized
	kindPipePut = 5 // aux: region; u64 offset; u64 length: the bytes wait in the pipe
	kindPipeAck = 6 // aux: bytes of pipe data consumed (receiver → sender)

	putCacheFree = 1 // Put flag (byte 6): copy the payload out with non-temporal stores
)

var le = binary.LittleEndian

func align(n, a int) int { return (n + a - 1) &^ (a - 1) }

// ring is one process's view of a single-producer single-consumer byte
// ring in shared memory. tail and head are byte counts that only grow; the
// producer owns tail, the consumer owns head, and each keeps a private copy
// of the other's to touch shared lines only when it must.
type ring struct {
	tail, head     *atomic.Uint64
	populated      *atomic.Uint64 // data bytes from 0 the producer gave memory (prepare)
	waiting, space *atomic.Uint32
	data           []byte
	size           uint64
	mask           uint64

	// producer side
	ptail      uint64 // next record position
	cachedHead uint64
	ready      uint64 // data bytes from 0 with memory (prepare)
	fault      error  // why the data could not get more memory
	// consumer side
	chead      uint64
	cachedTail uint64
	mapped     uint64        // data bytes from 0 mapped in the consumer's view
	account    *atomic.Int64 // if set, counts the bytes mapped
}

// populateStep is the first part of a ring's data the producer gives
// memory, when it links the ring; each later step of the first lap
// doubles what the ring has, so a pair that exchanges a few small
// messages holds 16 KiB of its ring, and a busy one reaches the whole ring
// in a few steps. Each step is given memory and written over before
// anything is published in it: on a virtual machine the first write to
// fresh memory costs tens of µs a page, and left to the traffic it made
// one message in ten 10–20× slower until the ring had wrapped once (2 KiB
// ping-pong: p90 45–65 µs against 5 µs; writing one byte a page helped
// less than writing it all).
const populateStep = 16 << 10

func newRing(hdr, data []byte) *ring {
	r := &ring{
		tail:      (*atomic.Uint64)(unsafe.Pointer(&hdr[ringTail])),
		head:      (*atomic.Uint64)(unsafe.Pointer(&hdr[ringHead])),
		populated: (*atomic.Uint64)(unsafe.Pointer(&hdr[ringPopulated])),
		waiting:   (*atomic.Uint32)(unsafe.Pointer(&hdr[ringWaiting])),
		space:     (*atomic.Uint32)(unsafe.Pointer(&hdr[ringSpace])),
		data:      data,
		size:      uint64(len(data)),
		mask:      uint64(len(data)) - 1,
	}
	r.ptail, r.cachedHead = r.tail.Load(), r.head.Load()
	r.chead, r.cachedTail = r.head.Load(), r.tail.Load()
	return r
}

// maxRecord is the largest record a ring of capacity bytes carries: a
// quarter of it, so a full-size record always fits once the ring drains,
// wrap included.
func maxRecord(capacity int) int { return capacity / 4 }

// reserve returns the space for a record of n bytes at the tail (writing a
// wrap record first if needed), or nil when the ring lacks room now.
func (r *ring) reserve(n int) []byte {
	need := uint64(align(n, recAlign))
	pos := r.ptail & r.mask
	skip := uint64(0)
	if r.size-pos < need {
		skip = r.size - pos
	}
	if r.size-(r.ptail-r.cachedHead) < skip+need {
		r.cachedHead = r.head.Load()
		if r.size-(r.ptail-r.cachedHead) < skip+need {
			return nil
		}
	}
	if end := pos + need; end > r.ready && !r.prepare(max(end, pos+skip)) {
		return nil
	}
	if skip > 0 {
		w := r.data[pos : pos+recHeader]
		le.PutUint32(w[0:], uint32(skip))
		w[4] = kindWrap
		r.ptail += skip
		pos = 0
	}
	return r.data[pos : pos+need]
}

// prepare gives the data up to end its memory, a step at a time, and
// reports whether it could (fault says why not).
func (r *ring) prepare(end uint64) bool {
	hi := min(r.size, max(uint64(align(int(end), populateStep)), 2*r.ready))
	if err := populate(r.data[r.ready:hi]); err != nil {
		r.fault = err
		return false
	}
	clear(r.data[r.ready:hi])
	r.ready = hi
	r.populated.Store(hi) // before any record there: the consumer maps up to it
	return true
}

// commit publishes the record of n bytes reserve returned.
func (r *ring) commit(n int) {
	r.ptail += uint64(align(n, recAlign))
	r.tail.Store(r.ptail)
}

// free returns the bytes the producer could reserve now.
func (r *ring) free() int {
	r.cachedHead = r.head.Load()
	return int(r.size - (r.ptail - r.cachedHead))
}

// waitSpace blocks until n bytes of record fit (wrap included), or until
// d passes: the consumer wakes it when it frees space while the producer
// sleeps.
func (r *ring) waitSpace(n int, d time.Duration) {
	need := uint64(align(n, recAlign)) * 2 // room for a wrap too
	v := r.space.Load()
	r.waiting.Store(1)
	if uint64(r.free()) < need {
		futexSleep(r.space, v, d)
	}
	r.waiting.Store(0)
}

// peek returns the next record at the head, or nil when the ring is
// empty. Wrap records are consumed on the way. A malformed record (the
// peer broke the format) is a protocol error.
func (r *ring) peek() ([]byte, error) {
	for {
		if r.chead == r.cachedTail {
			r.cachedTail = r.tail.Load()
			if r.chead == r.cachedTail {
				return nil, nil
			}
		}
		if r.mapped < r.size && r.cachedTail > r.mapped {
			// First lap: map what the producer gave memory at once, not at
			// a fault per page — and no further, as mapping a page without
			// memory would give it some.
			hi := min(r.size, r.populated.Load())
			mapIn(r.data[r.mapped:hi])
			if r.account != nil {
				r.account.Add(int64(hi - r.mapped))
			}
			r.mapped = hi
		}
		pos := r.chead & r.mask
		avail := r.cachedTail - r.chead
		if avail < recHeader || r.size-pos < recHeader {
			return nil, driver.ProtocolError("shm ring: %d bytes published at %d, no record header", avail, pos)
		}
		h := r.data[pos:]
		n := uint64(le.Uint32(h))
		if h[4] == kindWrap {
			if n != r.size-pos || n > avail {
				return nil, driver.ProtocolError("shm ring: wrap of %d bytes at %d", n, pos)
			}
			r.advance(n) // publish at once: a producer may wait for exactly this room
			continue
		}
		stride := uint64(align(int(n), recAlign))
		if n < recHeader || stride > r.size-pos || stride > avail {
			return nil, driver.ProtocolError("shm ring: record of %d bytes at %d (%d published)", n, pos, avail)
		}
		return r.data[pos : pos+n], nil
	}
}

// release consumes the record peek returned and wakes a producer waiting
// for space.
func (r *ring) release(rec []byte) { r.advance(uint64(align(len(rec), recAlign))) }

func (r *ring) advance(n uint64) {
	r.chead += n
	r.head.Store(r.chead)
	if r.waiting.Load() != 0 {
		r.space.Add(1)
		futexWakeAll(r.space)
	}
}

// pending reports whether a record is waiting, from the shared counters
// only (any goroutine may ask, while another consumes).
func (r *ring) pending() bool {
	return r.head.Load() != r.tail.Load()
}
