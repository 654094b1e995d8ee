package shm

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// The inbound queue of one process, after Open MPI's shared-memory BTL
// (vader's btl_vader_fifo.h, now btl_sm_fifo.h): a list with many
// producers and one consumer, threaded through the fragments the senders
// own. A sender writes a message into a fragment of its own pool, then
// swaps the fragment's reference into the receiver's tail word and links
// the previous tail to it; the receiver reads fragments from its head in
// place. Memory grows with the ranks (one pool each), not with the pairs
// that talk, as the per-pair rings do.
//
// Everything a peer wrote is checked before it is used: a reference must
// name a pool and a slot in it, a fragment's length must fit its slot, and
// a fragment must have been posted since the consumer last took it (a
// cycle in the list, or a fragment given twice, is corruption, not a
// loop). The consumer never waits on a producer that swapped the tail but
// has not linked yet: it keeps that fragment until the link shows, so
// that the slot is not given back while the producer may still write its
// next word.

// A fragment reference: the owner's local rank in the upper 32 bits, the
// slot in its pool in the lower.
type fragRef uint64

// fifoEmpty is the reference of no fragment: an empty queue's head and
// tail, the last fragment's next.
const fifoEmpty = fragRef(^uint64(0))

func makeFragRef(owner, slot int) fragRef { return fragRef(uint64(owner)<<32 | uint64(uint32(slot))) }

func (r fragRef) owner() int { return int(uint64(r) >> 32) }
func (r fragRef) slot() int  { return int(uint32(r)) }

// Fragment header, at the start of every slot (little-endian, 8-byte
// aligned words).
const (
	fragNext   = 0  // u64: the next fragment's reference, fifoEmpty at the tail
	fragLen    = 8  // u32: bytes of payload
	fragState  = 12 // u32: fragPosted from push to pop, fragTaken after
	fragHeader = 16 // payload from here
)

// Fragment states: a consumer takes only a fragment its producer posted,
// and marks it taken, so a fragment met twice is corruption.
const (
	fragTaken  = 0
	fragPosted = 0x706f7374 // "post"
)

// Queue header words, in the receiving process's segment, on lines of
// their own: producers swap the tail while the consumer moves the head.
const (
	fifoHead = 0       // u64 fragRef: the consumer's
	fifoTail = wordGap // u64 fragRef: swapped by producers
	// FifoHeaderSize is the bytes a queue's head and tail take.
	FifoHeaderSize = fifoTail + 8
)

// errCorruptFifo: a peer's segment holds what no producer following the
// protocol writes.
var errCorruptFifo = errors.New("shm: corrupt inbound queue")

// fragPool is the fragment slots one process owns, as one process maps
// them, header included: small slots of smallSize bytes from the start of
// mem (the records of a few hundred bytes most messages are), then slots
// of slotSize bytes to its end. Slots are numbered across both.
type fragPool struct {
	mem        []byte
	small      int // slots of smallSize bytes
	smallSize  int // a multiple of 8, more than fragHeader (if small > 0)
	slotSize   int // a multiple of 8, more than fragHeader
	smallBytes int // small × smallSize, within mem
}

// newFragPool returns the pool in mem: small slots of smallSize bytes,
// then slots of slotSize.
func newFragPool(mem []byte, small, smallSize, slotSize int) fragPool {
	return fragPool{mem: mem, small: small, smallSize: smallSize, slotSize: slotSize, smallBytes: small * smallSize}
}

func (p fragPool) slots() int {
	if p.slotSize <= fragHeader || p.smallBytes > len(p.mem) {
		return 0
	}
	return p.small + (len(p.mem)-p.smallBytes)/p.slotSize
}

// span returns where slot i starts in mem and its size (i < slots()).
func (p fragPool) span(i int) (off, size int) {
	if i < p.small {
		return i * p.smallSize, p.smallSize
	}
	return p.smallBytes + (i-p.small)*p.slotSize, p.slotSize
}

// capacity returns slot i's payload bytes.
func (p fragPool) capacity(i int) int {
	_, size := p.span(i)
	return size - fragHeader
}

// word returns the 64-bit word at off within slot i.
func (p fragPool) word(i, off int) *atomic.Uint64 {
	o, _ := p.span(i)
	return (*atomic.Uint64)(unsafe.Pointer(&p.mem[o+off]))
}

// word32 returns the 32-bit word at off within slot i.
func (p fragPool) word32(i, off int) *atomic.Uint32 {
	o, _ := p.span(i)
	return (*atomic.Uint32)(unsafe.Pointer(&p.mem[o+off]))
}

// payload returns slot i's payload area.
func (p fragPool) payload(i int) []byte {
	o, size := p.span(i)
	return p.mem[o+fragHeader : o+size]
}

// fifo is one receiver's inbound queue as a process sees it: the queue
// words in the receiver's segment and every local process's pool, by
// local rank. Producers may be any process; pop is the receiver's alone,
// and the fields below pools are its private state.
type fifo struct {
	head, tail *atomic.Uint64
	pools      []fragPool

	// unlinked is a fragment taken off the head whose producer successor
	// swapped the tail but has not linked it yet: pop hands it out once
	// the link shows.
	unlinked fragRef
}

// newFifo returns the queue whose words are the first FifoHeaderSize bytes
// of hdr (8-byte aligned), over pools. It does not reset the words: the
// owner does that once, with reset, before any producer maps them.
func newFifo(hdr []byte, pools []fragPool) (*fifo, error) {
	if len(hdr) < FifoHeaderSize || uintptr(unsafe.Pointer(&hdr[0]))%8 != 0 {
		return nil, fmt.Errorf("shm: inbound queue header of %d bytes, want %d, 8-byte aligned", len(hdr), FifoHeaderSize)
	}
	for i, p := range pools {
		bad := func(size int) bool { return size%8 != 0 || size <= fragHeader }
		if len(p.mem) > 0 && (bad(p.slotSize) || p.small > 0 && bad(p.smallSize) || p.small < 0 || p.smallBytes != p.small*p.smallSize ||
			uintptr(unsafe.Pointer(&p.mem[0]))%8 != 0) {
			return nil, fmt.Errorf("shm: fragment pool of rank %d: slots of %d and %d bytes, want multiples of 8 above %d, 8-byte aligned",
				i, p.smallSize, p.slotSize, fragHeader)
		}
	}
	return &fifo{
		head:     (*atomic.Uint64)(unsafe.Pointer(&hdr[fifoHead])),
		tail:     (*atomic.Uint64)(unsafe.Pointer(&hdr[fifoTail])),
		pools:    pools,
		unlinked: fifoEmpty,
	}, nil
}

// reset empties the queue: the owner's, before any producer maps it.
func (q *fifo) reset() {
	q.head.Store(uint64(fifoEmpty))
	q.tail.Store(uint64(fifoEmpty))
	q.unlinked = fifoEmpty
}

// pending reports whether a fragment is in the queue or being posted:
// the tail is empty only when the queue is. It reads shared words only,
// so any goroutine may ask while the consumer pops.
func (q *fifo) pending() bool { return fragRef(q.tail.Load()) != fifoEmpty }

// check returns r's pool and slot, or an error if r names none.
func (q *fifo) check(r fragRef) (fragPool, int, error) {
	o, s := r.owner(), r.slot()
	if o >= len(q.pools) || s >= q.pools[o].slots() {
		return fragPool{}, 0, fmt.Errorf("%w: fragment %d of rank %d does not exist", errCorruptFifo, s, o)
	}
	return q.pools[o], s, nil
}

// push posts the fragment r, whose payload (n bytes) its owner, the
// caller, has written, to the end of the queue. An error means the
// receiver's segment is corrupt; the fragment may or may not be posted.
func (q *fifo) push(r fragRef, n int) error {
	p, s, err := q.check(r)
	if err != nil {
		return err
	}
	if n < 0 || n > p.capacity(s) {
		return fmt.Errorf("shm: fragment payload of %d bytes in a slot of %d", n, p.capacity(s))
	}
	p.word(s, fragNext).Store(uint64(fifoEmpty))
	p.word32(s, fragLen).Store(uint32(n))
	p.word32(s, fragState).Store(fragPosted)
	prev := fragRef(q.tail.Swap(uint64(r)))
	if prev == fifoEmpty {
		q.head.Store(uint64(r))
		return nil
	}
	pp, ps, err := q.check(prev) // never write through a reference not checked
	if err != nil {
		return err
	}
	pp.word(ps, fragNext).Store(uint64(r))
	return nil
}

// pop takes the fragment at the head of the queue and returns it with its
// payload: ok false when there is none to take yet. The payload stays the
// producer's memory: the caller gives the fragment back to its owner once
// done with it. An error means a peer wrote what the protocol does not;
// the queue is then unusable.
func (q *fifo) pop() (r fragRef, payload []byte, ok bool, err error) {
	if q.unlinked != fifoEmpty {
		// The head was the last fragment when its successor's producer
		// swapped the tail: hand it out once that producer has linked.
		p, s, _ := q.check(q.unlinked) // checked when taken
		next := fragRef(p.word(s, fragNext).Load())
		if next == fifoEmpty {
			return 0, nil, false, nil
		}
		if _, _, err := q.check(next); err != nil {
			return 0, nil, false, err
		}
		r, q.unlinked = q.unlinked, fifoEmpty
		q.head.Store(uint64(next))
		return r, q.payloadOf(r), true, nil
	}
	r = fragRef(q.head.Load())
	if r == fifoEmpty {
		return 0, nil, false, nil
	}
	p, s, err := q.check(r)
	if err != nil {
		return 0, nil, false, err
	}
	if !p.word32(s, fragState).CompareAndSwap(fragPosted, fragTaken) {
		return 0, nil, false, fmt.Errorf("%w: fragment %d of rank %d taken twice (a cycle, or given twice)", errCorruptFifo, s, r.owner())
	}
	if n := p.word32(s, fragLen).Load(); int(n) > p.capacity(s) {
		return 0, nil, false, fmt.Errorf("%w: fragment %d of rank %d claims %d bytes in a slot of %d",
			errCorruptFifo, s, r.owner(), n, p.capacity(s))
	}
	next := fragRef(p.word(s, fragNext).Load())
	if next == fifoEmpty {
		// r looks last: close the list, unless a producer has swapped
		// the tail since, in which case its link to r's next is coming.
		q.head.Store(uint64(fifoEmpty))
		if !q.tail.CompareAndSwap(uint64(r), uint64(fifoEmpty)) {
			q.unlinked = r
			return q.pop()
		}
		return r, q.payloadOf(r), true, nil
	}
	if _, _, err := q.check(next); err != nil {
		return 0, nil, false, err
	}
	q.head.Store(uint64(next))
	return r, q.payloadOf(r), true, nil
}

// payloadOf returns the payload of r, checked: its length as posted.
func (q *fifo) payloadOf(r fragRef) []byte {
	p, s, _ := q.check(r)
	n := min(int(p.word32(s, fragLen).Load()), p.capacity(s))
	return p.payload(s)[:n]
}
