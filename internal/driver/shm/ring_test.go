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
)

func testSegment(t *testing.T, senders []int, capacity int) *segment {
	t.Helper()
	s, err := createSegment(filepath.Join(t.TempDir(), "seg"), 0, senders, capacity)
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
	const count = 20000
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
	seg, err := createSegment(filepath.Join(dir, "ok"), 3, []int{1, 2}, 2*pageSize)
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
	if _, err := createSegment(filepath.Join(dir, "ok"), 3, []int{1}, pageSize); err == nil {
		t.Fatal("created over an existing segment")
	}
	for _, c := range []int{100, 3 * pageSize} {
		if _, err := createSegment(filepath.Join(dir, fmt.Sprint("bad", c)), 0, []int{1}, c); err == nil {
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
		wantReady uint64
	}{
		{"small records taken at once", repeat(1<<10, 5000), false, true, populateStep},
		{"40 small records in flight", repeat(1<<10, 40), false, false, 64 << 10}, // doubled four times
		{"a packet of 2 KiB", []int{2 << 10}, false, true, populateStep},
		{"a packet of 4 KiB", []int{4 << 10}, false, true, capacity}, // the whole ring at once
		{"a stream's chunk", []int{16 << 10}, true, true, capacity},  // the whole ring at once
		{"a consumer that stalls", repeat(1<<10, capacity/(1<<10)), false, false, capacity},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seg := testSegment(t, []int{1}, capacity)
			hdr, data := seg.ringBlock(0)
			prod, cons := newRing(hdr, data), newRing(hdr, data)
			if !prod.startSmall() {
				t.Fatal(prod.fault)
			}
			for i, n := range tc.sizes {
				w := prod.reserve(n)
				if tc.stream {
					w = prod.reserveStream(n)
				}
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
