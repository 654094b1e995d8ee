package shm

import (
	"encoding/binary"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/futex"
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
	ready      uint64         // data bytes from 0 with memory (prepare): the ring in use
	wpos       int            // where reserve placed the last record
	fault      error          // why the data could not get more memory
	granted    *atomic.Uint64 // if set, the owner's count of ring data with memory (claim)
	budget     uint64         // the most granted may reach, short of records that need more
	// consumer side
	chead      uint64
	cachedTail uint64
	mapped     uint64        // data bytes from 0 mapped in the consumer's view
	account    *atomic.Int64 // if set, counts the bytes mapped
}

// populateStep is the first part of a ring's data the producer gives
// memory, when it links the ring; each later step doubles what the ring
// has, when its traffic needs more room (reserve), so a pair that
// exchanges small messages holds 4 KiB of its ring, and one that streams
// reaches the whole ring in a few steps. Each step is given memory and
// written over before anything is published in it: on a virtual machine
// the first write to fresh memory costs tens of µs a page, and left to
// the traffic it made one message in ten 10–20× slower until the ring had
// wrapped once (2 KiB ping-pong: p90 45–65 µs against 5 µs; writing one
// byte a page helped less than writing it all).
const populateStep = 4 << 10

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
	r.ready = r.size // all of it, unless the producer starts small (startSmall)
	r.chead, r.cachedTail = r.head.Load(), r.tail.Load()
	return r
}

// maxRecord is the largest record a ring of capacity bytes carries: a
// quarter of it, so a full-size record always fits once the ring drains,
// wrap included.
func maxRecord(capacity int) int { return capacity / 4 }

// reserve returns the space for a record of n bytes at the tail (writing a
// wrap record first if needed), or nil when the ring lacks room now.
//
// The ring the producer uses is the part of the data that has memory
// (ready): a record that does not fit before its end goes to the start
// (a wrap record skips the rest of the data), and the ring gets more
// memory only when the record cannot go there either — the consumer has
// not freed the start yet, or the record is larger than the part. So a
// pair holds the memory its traffic has in flight at most, not the
// memory it has passed through: a stream of 1 KiB messages keeps a 4
// KiB ring for ever. Until the ring has all its memory, records end a
// header short of the part's end, so that a wrap record always lands in
// memory.
//
// A record of wholeRingRecord bytes or more takes the whole ring at once
// instead, as reserveStream does. Growth comes out of the owner's budget
// (claim): a ring that finds it spent waits for its consumer instead,
// unless the record could never fit.
func (r *ring) reserve(n int) []byte { return r.reserveFor(n, n >= wholeRingRecord, false) }

// wholeRingRecord is the smallest record that gives its ring all its
// memory when the ring must grow. Records this large, written again and
// again over the same few lines of a small ring, pay for each line's
// trip back from the consumer's cache: np2 Allreduce of 4 and 16 KiB ran
// 1.4 and 1.55 times slower (p50 4.2 against 6.8 µs at 16 KiB) than
// through the whole ring, whose lines come back from the shared cache.
// Smaller records gain nothing from more memory (1 KiB: 0.9 times).
const wholeRingRecord = 4 << 10

// reserveStream is reserve for a chunk of a large message: when the ring
// must grow, it takes all of its memory at once, as a stream needs the
// whole ring in flight for sender and receiver to copy at once (with 512
// KiB of a 2 MiB ring, 4 MiB moved at 9 GB/s; with all of it, 31).
func (r *ring) reserveStream(n int) []byte { return r.reserveFor(n, true, true) }

// reserveFor is reserve, taking the whole ring when it must grow if
// whole is set; a stream's records also need four of them in flight.
func (r *ring) reserveFor(n int, whole, stream bool) []byte {
	need := uint64(align(n, recAlign))
	for {
		pos := r.ptail & r.mask
		lim := r.ready
		if lim < r.size {
			lim -= recHeader
		}
		if pos+need <= lim {
			if !r.room(need) {
				return nil
			}
			r.wpos = int(pos)
			return r.data[pos : pos+need]
		}
		if skip := r.size - pos; need <= lim && r.room(skip+need) {
			w := r.data[pos : pos+recHeader]
			le.PutUint32(w[0:], uint32(skip))
			w[4] = kindWrap
			r.ptail += skip
			r.wpos = 0
			return r.data[:need]
		}
		if r.ready == r.size {
			return nil // full
		}
		// Grow: to the whole ring for a stream, else at least doubling,
		// as far as the owner's budget allows. Past it, only a record
		// that could not go in even with the ring drained — before the
		// part's end or before the tail, the most a wrap frees — makes
		// the ring grow, to room for two of it (a stream to four chunks,
		// to keep them in flight): otherwise the record waits for the
		// consumer, as in a full ring.
		want, must := max(pos+need+recHeader, 2*r.ready), uint64(0)
		if whole {
			want = r.size
		}
		switch {
		case stream:
			must = 4*need + recHeader
		case pos+need > lim && need > pos:
			must = 2*need + recHeader
		}
		if !r.prepare(must, want) {
			return nil // no room now (or no memory to be had: fault)
		}
	}
}

// startSmall has the producer of a new ring use only a first step of its
// data, giving it memory (prepare), and grow it as its traffic needs.
func (r *ring) startSmall() bool {
	r.ready = 0
	return r.prepare(populateStep, populateStep)
}

// useBudget has the ring's growth count against the owner's budget, in
// the owner's granted word.
func (r *ring) useBudget(budget uint64, granted *atomic.Uint64) {
	r.budget, r.granted = budget, granted
}

// room reports whether n more bytes fit between the tail and the head.
func (r *ring) room(n uint64) bool {
	if r.size-(r.ptail-r.cachedHead) >= n {
		return true
	}
	r.cachedHead = r.head.Load()
	return r.size-(r.ptail-r.cachedHead) >= n
}

// prepare gives the data memory up to want, or as far as the owner's
// budget allows but at least up to must (claim), and reports whether it
// added any (fault says why not, when memory could not be had). What it
// adds lies beyond every record ever written: the producer has wrapped
// before the old end on every lap.
func (r *ring) prepare(must, want uint64) bool {
	must = min(r.size, uint64(align(int(must), populateStep)))
	want = max(must, min(r.size, uint64(align(int(want), populateStep))))
	hi := r.claim(must, want)
	if hi <= r.ready {
		return false
	}
	if err := populate(r.data[r.ready:hi]); err != nil {
		if r.granted != nil {
			r.granted.Add(-(hi - r.ready))
		}
		r.fault = err
		return false
	}
	clear(r.data[r.ready:hi])
	r.ready = hi
	r.populated.Store(hi) // before any record there: the consumer maps up to it
	return true
}

// claim takes the memory for the data up to want from the owner's
// budget, or what the budget has left (in whole steps), but at least up
// to must; it returns how far the data may have memory (r.ready: no
// further). Every sender of a segment claims from the same word, so the
// owner's rings together hold the budget, plus what records too large for
// their rings forced, however many peers talk to it.
func (r *ring) claim(must, want uint64) uint64 {
	if r.granted == nil {
		return want
	}
	for {
		g := r.granted.Load()
		hi := want
		if left := r.budget - min(g, r.budget); want-r.ready > left {
			hi = max(must, r.ready+left&^(populateStep-1))
		}
		if hi <= r.ready {
			return r.ready
		}
		if r.granted.CompareAndSwap(g, g+hi-r.ready) {
			return hi
		}
	}
}

// commit publishes the record of n bytes reserve returned.
func (r *ring) commit(n int) {
	r.ptail += uint64(align(n, recAlign))
	r.tail.Store(r.ptail)
}

// free returns the most bytes a record could take now, and whether that
// is exact. With all its memory, or with more to be had (its owner's
// budget not spent), it is what the consumer has freed of the whole ring,
// not exact: a wrap may waste the rest of the ring, and a ring that may
// grow takes a record that does not fit its part by growing. With part
// of its memory and none more to be had, where the record would go is
// exact: before the part's end, or at the start after a wrap (the ring
// grows only for a record that could never go in).
func (r *ring) free() (n int, exact bool) {
	r.cachedHead = r.head.Load()
	inflight := r.ptail - r.cachedHead
	if r.ready == r.size || r.mayGrow() {
		return int(r.size - inflight), false
	}
	pos, lim := r.ptail&r.mask, r.ready-recHeader
	var atTail, atStart uint64
	if pos < lim {
		atTail = min(lim-pos, r.size-inflight)
	}
	if pos > inflight {
		atStart = min(pos-inflight, lim)
	}
	return int(max(atTail, atStart)), true
}

// mayGrow reports whether the ring has part of its memory and its
// owner's budget has more.
func (r *ring) mayGrow() bool {
	return r.ready < r.size && (r.granted == nil || r.granted.Load()+populateStep <= r.budget)
}

// fits reports whether a record of n bytes can be reserved now: twice
// the record where free is not exact.
func (r *ring) fits(n int) bool {
	free, exact := r.free()
	need := align(n, recAlign)
	if !exact {
		need *= 2
	}
	return free >= need
}

// waitSpace blocks until a record of n bytes fits (wrap included), or
// until d passes: the consumer wakes it when it frees space while the
// producer sleeps.
func (r *ring) waitSpace(n int, d time.Duration) {
	v := r.space.Load()
	r.waiting.Store(1)
	if !r.fits(n) {
		futex.Sleep(r.space, v, d)
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
			if r.mapped < r.size {
				r.mapPopulated()
			}
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

// mapPopulated maps, in the consumer's view, what the producer gave
// memory since the last look: at once, not at a fault per page, and no
// further, as mapping a page without memory would give it some. Called
// after each new tail is loaded: the producer stores populated before it
// publishes a record there, so every record up to that tail is mapped.
func (r *ring) mapPopulated() {
	if hi := min(r.size, r.populated.Load()); hi > r.mapped {
		mapIn(r.data[r.mapped:hi])
		if r.account != nil {
			r.account.Add(int64(hi - r.mapped))
		}
		r.mapped = hi
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
		futex.WakeAll(r.space)
	}
}

// pending reports whether a record is waiting, from the shared counters
// only (any goroutine may ask, while another consumes).
func (r *ring) pending() bool {
	return r.head.Load() != r.tail.Load()
}
