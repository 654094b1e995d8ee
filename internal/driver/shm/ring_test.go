package shm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/testenv"
)

func testSegment(t *testing.T, senders []int, capacity int) *segment {
	t.Helper()
	s, err := createSegment(filepath.Join(t.TempDir(), "seg"), 0, senders, capacity, DefaultBudget, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.unmap() })
	return s
}

// TestRingStream pushes records of random sizes through a ring from one
// goroutine to another (as two processes would, through the same
// memory), wrapping many times; every record must come out intact and in
// order — in a small ring with all its memory, and in a larger one that
// starts small and grows as records need.
func TestRingStream(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity int
		small    bool
	}{{"whole", pageSize, false}, {"growing", 256 << 10, true}} {
		t.Run(tc.name, func(t *testing.T) { ringStream(t, tc.capacity, tc.small) })
	}
}

func ringStream(t *testing.T, capacity int, small bool) {
	seg := testSegment(t, []int{1}, capacity)
	hdr, data := seg.ringBlock(0)
	prod, cons := newRing(hdr, data), newRing(hdr, data)
	if small && !prod.startSmall() {
		t.Fatal(prod.fault)
	}
	// Under the race detector, which watches the two sides' memory, a
	// tenth of the records: still many wraps.
	count := testenv.Pick(20000, 2000)
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := make([]int, count)
	for i := range sizes {
		sizes[i] = recHeader + rng.IntN(maxRecord(int(prod.size))-recHeader+1)
	}
	done := make(chan error, 1)
	go func() {
		for i := 0; i < count; {
			rec, err := cons.peek()
			if err != nil {
				done <- err
				return
			}
			if rec == nil {
				continue
			}
			if len(rec) != sizes[i] || rec[4] != kindPacket || !bytes.Equal(rec[recHeader:], fill(len(rec)-recHeader, i)) {
				done <- fmt.Errorf("record %d: %d bytes, want %d", i, len(rec), sizes[i])
				return
			}
			cons.release(rec)
			i++
		}
		done <- nil
	}()
	for i := 0; i < count; i++ {
		var w []byte
		for w = prod.reserve(sizes[i]); w == nil; w = prod.reserve(sizes[i]) {
			prod.waitSpace(sizes[i], time.Millisecond)
		}
		le.PutUint32(w, uint32(sizes[i]))
		w[4] = kindPacket
		copy(w[recHeader:], fill(sizes[i]-recHeader, i))
		prod.commit(sizes[i])
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("consumer stuck")
	}
}

func fill(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*7 + i)
	}
	return b
}

func TestRingMalformed(t *testing.T) {
	tests := []struct {
		name  string
		write func(data []byte) uint64 // returns the tail to publish
	}{
		{"length below the header", func(d []byte) uint64 { le.PutUint32(d, 3); d[4] = kindPacket; return 16 }},
		{"length past published bytes", func(d []byte) uint64 { le.PutUint32(d, 64); d[4] = kindPacket; return 32 }},
		{"record past the end", func(d []byte) uint64 { le.PutUint32(d, uint32(len(d)+16)); d[4] = kindPacket; return uint64(len(d)) }},
		{"wrap not to the end", func(d []byte) uint64 { le.PutUint32(d, 32); d[4] = kindWrap; return 64 }},
		{"partial header", func(d []byte) uint64 { return 8 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seg := testSegment(t, []int{1}, pageSize)
			hdr, data := seg.ringBlock(0)
			r := newRing(hdr, data)
			r.tail.Store(tc.write(data))
			if _, err := r.peek(); !errors.Is(err, driver.ErrProtocol) {
				t.Fatalf("peek: %v, want a protocol error", err)
			}
		})
	}
}

func TestSegmentOpenChecks(t *testing.T) {
	dir := t.TempDir()
	seg, err := createSegment(filepath.Join(dir, "ok"), 3, []int{1, 2}, 2*pageSize, DefaultBudget, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.unmap()
	peer, err := openSegment(filepath.Join(dir, "ok"))
	if err != nil {
		t.Fatal(err)
	}
	defer peer.unmap()
	if peer.nrings != 2 || peer.capacity != 2*pageSize || peer.owner() != 3 || peer.ringFor(2) != 1 || peer.ringFor(9) != -1 {
		t.Fatalf("header %d rings of %d, owner %d", peer.nrings, peer.capacity, peer.owner())
	}
	if _, err := createSegment(filepath.Join(dir, "ok"), 3, []int{1}, pageSize, DefaultBudget, 0); err == nil {
		t.Fatal("created over an existing segment")
	}
	for _, c := range []int{100, 3 * pageSize} {
		if _, err := createSegment(filepath.Join(dir, fmt.Sprint("bad", c)), 0, []int{1}, c, DefaultBudget, 0); err == nil {
			t.Errorf("capacity %d accepted", c)
		}
	}
	if _, err := openSegment(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("opened a missing segment")
	}
}

// TestRingGrowsWithTraffic checks that a ring that starts small gets more
// memory only when its traffic has more in flight than it holds.
func TestRingGrowsWithTraffic(t *testing.T) {
	const capacity = 256 << 10
	cases := []struct {
		name      string
		sizes     []int // records, in order
		stream    bool  // chunks of a large message (reserveStream)
		consume   bool  // the consumer takes each record at once
		budget    uint64
		wantReady uint64
	}{
		{"small records taken at once", repeat(1<<10, 5000), false, true, DefaultBudget, populateStep},
		{"40 small records in flight", repeat(1<<10, 40), false, false, DefaultBudget, 64 << 10}, // doubled four times
		{"a packet of 2 KiB", []int{2 << 10}, false, true, DefaultBudget, populateStep},
		{"a packet of 4 KiB", []int{4 << 10}, false, true, DefaultBudget, capacity}, // the whole ring at once
		{"a stream's chunk", []int{16 << 10}, true, true, DefaultBudget, capacity},  // the whole ring at once
		{"a consumer that stalls", repeat(1<<10, capacity/(1<<10)), false, false, DefaultBudget, capacity},
		// Past the budget a ring grows only as far as it has left, then
		// waits for its consumer; a record that could never fit forces
		// room for two of it, a stream for four.
		{"40 small records in flight, budget 16 KiB", repeat(1<<10, 40), false, false, 16 << 10, 16 << 10},
		{"a packet of 4 KiB, budget 8 KiB", []int{4 << 10}, false, true, 8 << 10, 12 << 10},
		{"a packet of 4 KiB, budget 32 KiB", []int{4 << 10}, false, true, 32 << 10, 32 << 10},
		{"a stream's chunk, budget 8 KiB", []int{16 << 10}, true, true, 8 << 10, 68 << 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seg := testSegment(t, []int{1}, capacity)
			hdr, data := seg.ringBlock(0)
			prod, cons := newRing(hdr, data), newRing(hdr, data)
			_, granted := seg.budget()
			prod.useBudget(tc.budget, granted)
			if !prod.startSmall() {
				t.Fatal(prod.fault)
			}
			for i, n := range tc.sizes {
				reserve := prod.reserve
				if tc.stream {
					reserve = prod.reserveStream
				}
				w := reserve(n)
				if w == nil {
					if tc.consume {
						t.Fatalf("record %d of %d bytes found no room", i, n)
					}
					break // full: every byte has memory now
				}
				le.PutUint32(w, uint32(n))
				w[4] = kindPacket
				prod.commit(n)
				if tc.consume {
					rec, err := cons.peek()
					if err != nil || len(rec) != n {
						t.Fatalf("record %d: %d bytes, %v", i, len(rec), err)
					}
					cons.release(rec)
				}
			}
			if prod.ready != tc.wantReady || prod.populated.Load() != tc.wantReady {
				t.Errorf("ring has %d bytes with memory (published %d), want %d", prod.ready, prod.populated.Load(), tc.wantReady)
			}
			if g := granted.Load(); g != prod.ready {
				t.Errorf("the owner counts %d bytes granted, the ring has %d", g, prod.ready)
			}
		})
	}
}

func repeat(n, count int) []int {
	out := make([]int, count)
	for i := range out {
		out[i] = n
	}
	return out
}

// TestRingBudgetShared checks that the rings of one segment draw on one
// budget: the first ring to grow takes what is left, and the next gets
// only what its records force.
func TestRingBudgetShared(t *testing.T) {
	const capacity, budget = 256 << 10, 64 << 10
	seg := testSegment(t, []int{1, 2}, capacity)
	b, granted := seg.budget()
	if b != DefaultBudget {
		t.Fatalf("segment budget %d, want %d", b, DefaultBudget)
	}
	var rings [2]*ring
	for i := range rings {
		hdr, data := seg.ringBlock(i)
		rings[i] = newRing(hdr, data)
		rings[i].useBudget(budget, granted)
		if !rings[i].startSmall() {
			t.Fatal(rings[i].fault)
		}
	}
	for i, want := range []uint64{budget - populateStep, 12 << 10} {
		if rings[i].reserve(4<<10) == nil {
			t.Fatalf("ring %d: no room for a 4 KiB record", i)
		}
		if rings[i].ready != want {
			t.Errorf("ring %d has %d bytes with memory, want %d", i, rings[i].ready, want)
		}
	}
	if g, sum := granted.Load(), rings[0].ready+rings[1].ready; g != sum {
		t.Errorf("granted %d, the rings have %d", g, sum)
	}
}

// TestRingFree checks that free is exact for a ring using part of its
// data: a record fits without the ring growing exactly when free says so
// (waitSpace relies on it to sleep only when the record cannot go in).
func TestRingFree(t *testing.T) {
	for _, part := range []uint64{populateStep, 16 << 10, 64 << 10} {
		t.Run(fmt.Sprint(part), func(t *testing.T) {
			seg := testSegment(t, []int{1}, 256<<10)
			hdr, data := seg.ringBlock(0)
			prod, cons := newRing(hdr, data), newRing(hdr, data)
			_, granted := seg.budget()
			prod.useBudget(part, granted)
			if !prod.startSmall() || (part > populateStep && !prod.prepare(part, part)) {
				t.Fatal("no memory", prod.fault)
			}
			rng := rand.New(rand.NewPCG(3, uint64(part)))
			lim := int(part) - recHeader
			for step := 0; step < 20000; step++ {
				if rng.IntN(3) == 0 { // the consumer takes a few records
					consume(t, cons, rng.IntN(4))
					continue
				}
				n := recHeader + rng.IntN(lim/2)
				free, _ := prod.free()
				w := prod.reserve(n)
				if fits := free >= align(n, recAlign); fits != (w != nil) {
					t.Fatalf("step %d: free %d for a record of %d bytes, reserve gave %v", step, free, n, w != nil)
				}
				if prod.ready != part {
					t.Fatalf("step %d: the ring grew to %d", step, prod.ready)
				}
				if w != nil {
					publishPacket(prod, w, n)
				}
			}
		})
	}
}

// TestRingLiveOverBudget checks that a ring past its owner's budget never
// strands a record: once the consumer has drained it, whatever the
// position of the tail, the next record goes in (the ring grows when it
// must). Records of random sizes, the budget spent by the first step.
func TestRingLiveOverBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
	}{{"packets", false}, {"chunks", true}} {
		t.Run(tc.name, func(t *testing.T) { ringLiveOverBudget(t, tc.stream) })
	}
}

func ringLiveOverBudget(t *testing.T, stream bool) {
	seg := testSegment(t, []int{1}, 1<<20)
	hdr, data := seg.ringBlock(0)
	prod, cons := newRing(hdr, data), newRing(hdr, data)
	_, granted := seg.budget()
	prod.useBudget(populateStep, granted)
	if !prod.startSmall() {
		t.Fatal(prod.fault)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 20000; i++ {
		n := recHeader + rng.IntN(12<<10)
		reserve := prod.reserve
		if stream {
			reserve = prod.reserveStream
		}
		w := reserve(n)
		if w == nil {
			consume(t, cons, -1) // drain, as the consumer would
			if w = reserve(n); w == nil {
				t.Fatalf("record %d of %d bytes: no room in a drained ring (tail at %d of %d bytes with memory)", i, n, prod.ptail&prod.mask, prod.ready)
			}
		}
		publishPacket(prod, w, n)
	}
	if prod.ready == prod.size {
		t.Errorf("the ring grew whole past its budget")
	}
}

// TestRingFits checks what a producer waiting for room waits for: a ring
// that may still grow takes a record larger than its part by growing, so
// the wait must not outlast a drained ring (a sleep until its timeout,
// 10 ms, once in a few thousand small Bcasts); one that may not takes
// only what its part holds.
func TestRingFits(t *testing.T) {
	cases := []struct {
		name   string
		budget uint64
		record int
		want   bool
	}{
		{"may grow: a record past the part", DefaultBudget, 8 << 10, true},
		{"may grow: a record of the part", DefaultBudget, 1 << 10, true},
		{"budget spent: a record past the part", populateStep, 8 << 10, false},
		{"budget spent: a record of the part", populateStep, 1 << 10, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seg := testSegment(t, []int{1}, 256<<10)
			hdr, data := seg.ringBlock(0)
			r := newRing(hdr, data)
			_, granted := seg.budget()
			r.useBudget(tc.budget, granted)
			if !r.startSmall() {
				t.Fatal(r.fault)
			}
			if got := r.fits(tc.record); got != tc.want {
				t.Errorf("fits(%d) = %v in a drained ring of %d bytes with memory (may grow: %v), want %v", tc.record, got, r.ready, r.mayGrow(), tc.want)
			}
		})
	}
}

// consume takes up to n records (n < 0: all there are) from the ring.
func consume(t *testing.T, cons *ring, n int) {
	t.Helper()
	for ; n != 0; n-- {
		rec, err := cons.peek()
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			return
		}
		cons.release(rec)
	}
}

// publishPacket writes a Packet record of n bytes into w, which reserve
// returned, and publishes it.
func publishPacket(prod *ring, w []byte, n int) {
	le.PutUint32(w, uint32(n))
	w[4] = kindPacket
	prod.commit(n)
}
