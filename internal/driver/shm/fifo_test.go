package shm

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"unsafe"
)

// alignedBytes returns n zero bytes (n a multiple of 8), 8-byte aligned,
// as a segment's mapping is.
func alignedBytes(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n)
}

// testFifo returns an empty queue over ranks pools of slots slots of
// slotSize bytes each.
func testFifo(t testing.TB, ranks, slots, slotSize int) *fifo {
	t.Helper()
	pools := make([]fragPool, ranks)
	for i := range pools {
		pools[i] = newFragPool(alignedBytes(slots*slotSize), 0, 0, slotSize)
	}
	q, err := newFifo(alignedBytes(FifoHeaderSize), pools)
	if err != nil {
		t.Fatal(err)
	}
	q.reset()
	return q
}

// TestFifoProducers: several producers, each recycling a few slots of its
// own pool as the consumer gives them back, post numbered messages at
// once; the consumer gets every message once, each producer's in order.
func TestFifoProducers(t *testing.T) {
	for _, tc := range []struct{ producers, slots, msgs int }{
		{1, 1, 500},
		{3, 2, 2000},
		{8, 4, 1000},
	} {
		q := testFifo(t, tc.producers, tc.slots, 64)
		back := make([]chan int, tc.producers) // slots given back to each producer
		for p := range back {
			back[p] = make(chan int, tc.slots)
			for s := range tc.slots {
				back[p] <- s
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, tc.producers)
		for p := range tc.producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range tc.msgs {
					s := <-back[p]
					binary.LittleEndian.PutUint64(q.pools[p].payload(s), uint64(k))
					if err := q.push(makeFragRef(p, s), 8); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		next := make([]uint64, tc.producers)
		for got := 0; got < tc.producers*tc.msgs; {
			r, payload, ok, err := q.pop()
			if err != nil {
				t.Fatalf("%+v: pop: %v", tc, err)
			}
			if !ok {
				select {
				case err := <-errs:
					t.Fatalf("%+v: push: %v", tc, err)
				default:
				}
				continue
			}
			p := r.owner()
			if k := binary.LittleEndian.Uint64(payload); len(payload) != 8 || k != next[p] {
				t.Fatalf("%+v: producer %d: message %d (%d bytes), want %d", tc, p, k, len(payload), next[p])
			}
			next[p]++
			got++
			back[p] <- r.slot()
		}
		wg.Wait()
		if _, _, ok, err := q.pop(); ok || err != nil {
			t.Errorf("%+v: after every message: ok %v, %v", tc, ok, err)
		}
	}
}

// TestFifoUnlinked: a producer swapped the tail and has not linked yet;
// the consumer keeps the fragment before it (whose slot the producer is
// about to write) until the link shows.
func TestFifoUnlinked(t *testing.T) {
	q := testFifo(t, 2, 2, 32)
	a, b := makeFragRef(0, 0), makeFragRef(1, 1)
	if err := q.push(a, 3); err != nil {
		t.Fatal(err)
	}
	// b's producer, halfway through push: posted, tail swapped, no link.
	p := q.pools[1]
	p.word(1, fragNext).Store(uint64(fifoEmpty))
	p.word32(1, fragLen).Store(5)
	p.word32(1, fragState).Store(fragPosted)
	if prev := fragRef(q.tail.Swap(uint64(b))); prev != a {
		t.Fatalf("tail was %x, want %x", prev, a)
	}
	for range 3 {
		if r, _, ok, err := q.pop(); ok || err != nil {
			t.Fatalf("before the link: %x, ok %v, %v; want nothing yet", r, ok, err)
		}
	}
	q.pools[0].word(0, fragNext).Store(uint64(b)) // the link
	for _, want := range []struct {
		r fragRef
		n int
	}{{a, 3}, {b, 5}} {
		r, payload, ok, err := q.pop()
		if !ok || err != nil || r != want.r || len(payload) != want.n {
			t.Fatalf("pop: %x (%d bytes), ok %v, %v; want %x (%d bytes)", r, len(payload), ok, err, want.r, want.n)
		}
	}
	if r, _, ok, err := q.pop(); ok || err != nil {
		t.Fatalf("empty: %x, ok %v, %v", r, ok, err)
	}
}

// TestFifoCorrupt: what a hostile or broken peer can write into the
// queue words and fragment headers gives an error, never a read or a
// write out of bounds, and never the same fragment twice.
func TestFifoCorrupt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(q *fifo)
		push  bool // the error shows in push rather than pop
	}{
		{"head names no rank", func(q *fifo) { q.head.Store(uint64(makeFragRef(9, 0))) }, false},
		{"head names no slot", func(q *fifo) { q.head.Store(uint64(makeFragRef(1, 2))) }, false},
		{"length beyond the slot", func(q *fifo) {
			_ = q.push(makeFragRef(0, 0), 1)
			q.pools[0].word32(0, fragLen).Store(1 << 20)
		}, false},
		{"a fragment never posted", func(q *fifo) {
			_ = q.push(makeFragRef(0, 0), 1)
			q.pools[0].word32(0, fragState).Store(fragTaken)
		}, false},
		{"a cycle", func(q *fifo) {
			_ = q.push(makeFragRef(0, 0), 1)
			_ = q.push(makeFragRef(0, 1), 1)
			q.pools[0].word(1, fragNext).Store(uint64(makeFragRef(0, 0)))
			_, _, _, _ = q.pop() // takes 0; then 1 leads back to 0
		}, false},
		{"next names no slot", func(q *fifo) {
			_ = q.push(makeFragRef(0, 0), 1)
			q.pools[0].word(0, fragNext).Store(uint64(makeFragRef(0, 7)))
		}, false},
		{"tail names no slot", func(q *fifo) { q.tail.Store(uint64(makeFragRef(1, 5))) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := testFifo(t, 2, 2, 32)
			tc.setup(q)
			if tc.push {
				if err := q.push(makeFragRef(0, 0), 1); !errors.Is(err, errCorruptFifo) {
					t.Fatalf("push: %v, want errCorruptFifo", err)
				}
				return
			}
			var err error
			for range 8 {
				if _, _, _, err = q.pop(); err != nil {
					break
				}
			}
			if !errors.Is(err, errCorruptFifo) {
				t.Fatalf("pop: %v, want errCorruptFifo", err)
			}
		})
	}
	if _, err := newFifo(make([]byte, 8), nil); err == nil {
		t.Error("newFifo accepted a header of 8 bytes")
	}
	if _, err := newFifo(alignedBytes(16), []fragPool{newFragPool(alignedBytes(64), 0, 0, 12)}); err == nil {
		t.Error("newFifo accepted slots of 12 bytes")
	}
}

// FuzzFifo: whatever the queue words and the pools hold, pops end (each
// fragment is taken at most once without being posted again), and each
// payload lies within its slot.
func FuzzFifo(f *testing.F) {
	f.Add(make([]byte, FifoHeaderSize+2*3*32))
	seed := alignedBytes(FifoHeaderSize + 2*3*32)
	binary.LittleEndian.PutUint64(seed[fifoHead:], uint64(makeFragRef(0, 1)))
	binary.LittleEndian.PutUint64(seed[fifoTail:], uint64(makeFragRef(1, 2)))
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		const ranks, slots, slotSize = 2, 3, 32
		buf := alignedBytes(FifoHeaderSize + ranks*slots*slotSize)
		copy(buf, data)
		pools := make([]fragPool, ranks)
		for i := range pools {
			off := FifoHeaderSize + i*slots*slotSize
			pools[i] = newFragPool(buf[off:off+slots*slotSize], 0, 0, slotSize)
		}
		q, err := newFifo(buf[:FifoHeaderSize], pools)
		if err != nil {
			t.Fatal(err)
		}
		taken := 0
		for range 4 * ranks * slots {
			_, payload, ok, err := q.pop()
			if err != nil {
				return
			}
			if !ok {
				continue
			}
			if len(payload) > slotSize-fragHeader {
				t.Fatalf("payload of %d bytes in a slot of %d", len(payload), slotSize-fragHeader)
			}
			taken++
		}
		if taken > ranks*slots {
			t.Fatalf("%d fragments taken out of %d slots, none posted again", taken, ranks*slots)
		}
	})
}
