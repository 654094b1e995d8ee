package shm

import (
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/driver"
)

// queueGroup is group with every pair starting on the inbound queues.
func queueGroup(t testing.TB, n int, mod func(*Config)) ([]*Transport, []*recorder) {
	return group(t, n, func(c *Config) {
		c.Queue = QueueOn
		if mod != nil {
			mod(c)
		}
	})
}

// send posts one numbered packet from a rank, through SendNow when even
// and Post when odd (waiting for the rail when Post leaves it busy) —
// SendNow only while the pair has no fast box: a box record may overtake
// the queue's (TestQueueBoxFirst checks the rule that holds then).
func send(t *testing.T, rl driver.Rail, h *recorder, from, seq int) {
	t.Helper()
	body := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, uint32(from)), uint32(seq))
	if seq%2 == 0 && !rl.(*rail).linked.Load() && rl.(driver.Immediate).SendNow(body, nil) {
		return
	}
	done, err := rl.Post(&driver.Frame{Kind: driver.Packet, Iov: [][]byte{body}})
	if err != nil {
		t.Fatal(err)
	}
	if !done {
		select {
		case err := <-h.idle:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("rank %d: packet %d never left", from, seq)
		}
	}
}

// order checks that h received n numbered packets from each of senders,
// each sender's in the order sent.
func order(t *testing.T, h *recorder, senders []int, n int) {
	t.Helper()
	waitFor(t, "every packet", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.packets) >= n*len(senders)
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	next := map[int]int{}
	for _, p := range h.packets {
		if len(p) != 8 {
			t.Fatalf("packet of %d bytes", len(p))
		}
		from, seq := int(binary.LittleEndian.Uint32(p)), int(binary.LittleEndian.Uint32(p[4:]))
		if seq != next[from] {
			t.Fatalf("from rank %d: packet %d where %d was next", from, seq, next[from])
		}
		next[from]++
	}
	for _, s := range senders {
		if next[s] != n {
			t.Fatalf("from rank %d: %d packets, want %d", s, next[s], n)
		}
	}
}

// TestQueuePath: pairs that send fewer than busyRecords records have no
// fast box (no ring page gets memory, the receiver's segment holds its
// header and queue pages alone); pairs that send more get one
// mid-stream, and no record overtakes another across the switch; a
// receiver gives at most maxFastBoxes boxes.
func TestQueuePath(t *testing.T) {
	cases := []struct {
		name      string
		perSender int
		granted   uint32 // rings the receiver had given before
		wantRings int    // of the three senders
	}{
		{"quiet pairs stay on the queue", busyRecords - 1, 0, 0},
		{"busy pairs get a fast box mid-stream", 300, 0, 3},
		{"the receiver's last box goes to one sender", 300, maxFastBoxes - 1, 1},
		{"a receiver with none left keeps the queue", 300, maxFastBoxes, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, hs := queueGroup(t, 4, nil)
			ts[0].in.word32(offQueueBoxes).Store(tc.granted)
			var wg sync.WaitGroup
			for from := 1; from < 4; from++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for seq := range tc.perSender {
						send(t, ts[from].Rails(0)[0], hs[from], from, seq)
					}
				}()
			}
			wg.Wait()
			order(t, hs[0], []int{1, 2, 3}, tc.perSender)
			rings := 0
			for _, ir := range ts[0].rings {
				if ir.linked.Load() {
					rings++
				}
			}
			if rings != tc.wantRings {
				t.Errorf("%d fast boxes linked, want %d", rings, tc.wantRings)
			}
			if m, want := ts[0].SharedMemory(), int64(headerPages+tc.wantRings*pageSize); m != want {
				t.Errorf("receiver's SharedMemory %d, want its header pages and a page per box, %d", m, want)
			}
			if got, want := ts[0].in.word32(offQueueBoxes).Load(), tc.granted+uint32(tc.wantRings); got != want {
				t.Errorf("rings given %d, want %d", got, want)
			}
			{
				// Each sender's pool grows only when every fragment it has
				// is out: at most what it sent.
				if m, most := ts[1].SharedMemory(), headerPages+(tc.perSender+smallStep-1)/smallStep*smallStep*smallFragSize; tc.perSender < busyRecords && m > int64(most) {
					t.Errorf("sender's SharedMemory %d after %d records, want at most %d", m, tc.perSender, most)
				}
			}
		})
	}
}

// TestQueueBoxFirst: once a pair has its fast box, small packets sent at
// once go there and may overtake the queue's, but none falls behind a
// queue record sent after it: the receiver takes the box in before each
// queue record of the pair.
func TestQueueBoxFirst(t *testing.T) {
	ts, hs := queueGroup(t, 2, nil)
	rl := ts[1].Rails(0)[0]
	seq := 0
	for ; !rl.(*rail).linked.Load(); seq++ {
		send(t, rl, hs[1], 1, seq)
	}
	boxed := map[int]bool{}
	for range 500 {
		body := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 1), uint32(seq))
		if rl.(driver.Immediate).SendNow(body, nil) {
			boxed[seq] = true
		} else {
			t.Fatalf("packet %d: the box and the queue both refused it", seq)
		}
		seq++
		body = binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 1), uint32(seq))
		if done, err := rl.Post(&driver.Frame{Kind: driver.Packet, Iov: [][]byte{body}}); !done || err != nil {
			t.Fatalf("post %d: %v %v", seq, done, err)
		}
		seq++
	}
	waitFor(t, "every packet", func() bool {
		hs[0].mu.Lock()
		defer hs[0].mu.Unlock()
		return len(hs[0].packets) == seq
	})
	seen := map[int]bool{}
	hs[0].mu.Lock()
	defer hs[0].mu.Unlock()
	for _, p := range hs[0].packets {
		s := int(binary.LittleEndian.Uint32(p[4:]))
		if !boxed[s] {
			for b := range boxed {
				if b < s && !seen[b] {
					t.Fatalf("queue packet %d delivered before box packet %d, sent earlier", s, b)
				}
			}
		}
		seen[s] = true
	}
}

// TestQueuePoolSpent: a sender whose pool has 32 small fragments sends
// thousands of small records, each fragment back through its own queue before
// it goes again; with every fragment out, Post leaves the frame to the
// writer, which waits for a return.
func TestQueuePoolSpent(t *testing.T) {
	ts, hs := queueGroup(t, 3, func(c *Config) { c.PoolSlots = 2 })
	ts[0].in.word32(offQueueBoxes).Store(maxFastBoxes) // no ring: everything through the two fragments
	const n = 3000
	var wg sync.WaitGroup
	for from := 1; from < 3; from++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range n {
				send(t, ts[from].Rails(0)[0], hs[from], from, seq)
			}
		}()
	}
	wg.Wait()
	order(t, hs[0], []int{1, 2}, n)
	for from := 1; from < 3; from++ {
		// However fast the receiver returns them, the pool stays within
		// its bound (a small record takes a large fragment once the small
		// ones are all out).
		if s, l := ts[from].pool.small.size(), ts[from].pool.large.size(); s > smallPerLarge*2 || l > 2 {
			t.Errorf("rank %d's pool has %d small and %d large fragments, want at most %d and 2", from, s, l, smallPerLarge*2)
		}
	}
}

// TestQueueBye: a rank that only ever wrote through the queue says
// goodbye there, after its records.
func TestQueueBye(t *testing.T) {
	ts, hs := queueGroup(t, 3, nil)
	send(t, ts[2].Rails(0)[0], hs[2], 2, 0)
	ts[2].Close()
	for _, r := range []int{0, 1} {
		heardClose(t, hs[r], r, 2)
	}
	order(t, hs[0], []int{2}, 1)
}

// TestQueueMaxPacket: on the queue path a packet fits a fragment, so the
// core sends larger messages by rendezvous, whether or not the pair has
// its ring yet; a rail to a peer without a pool keeps its ring's limit.
func TestQueueMaxPacket(t *testing.T) {
	ts, _ := queueGroup(t, 2, nil)
	if got, want := ts[0].Rails(1)[0].Caps().MaxPacket, fragSlotSize-fragHeader-recHeader; got != want {
		t.Errorf("MaxPacket %d on the queue path, want %d", got, want)
	}
	rings, _ := group(t, 2, nil)
	if got := rings[0].Rails(1)[0].Caps().MaxPacket; got != maxRecord(rings[0].in.capacity)-recHeader {
		t.Errorf("MaxPacket %d on the rings", got)
	}
	big := make([]byte, fragSlotSize)
	if _, err := ts[0].Rails(1)[0].Post(&driver.Frame{Kind: driver.Packet, Iov: [][]byte{big}}); err == nil {
		t.Error("a packet larger than a fragment was accepted")
	}
}

// TestQueueCorrupt: a queue whose words a peer overwrote with a
// reference to no fragment loses every peer with an error instead of
// reading out of bounds or looping.
func TestQueueCorrupt(t *testing.T) {
	ts, hs := queueGroup(t, 3, nil)
	bad := makeFragRef(1, maxPoolSlots+5)
	ts[0].in.word64(queuePage + fifoHead).Store(uint64(bad))
	ts[0].in.word64(queuePage + fifoTail).Store(uint64(bad))
	ts[0].drainAll()
	for range 2 {
		select {
		case err := <-hs[0].lost:
			if !errors.Is(err, errCorruptFifo) {
				t.Errorf("peer lost with %v, want a corrupt queue", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a corrupt queue went unreported")
		}
	}
	if ts[0].drainAll() {
		t.Error("a dead queue still delivered")
	}
}

// FuzzQueuedRecord delivers arbitrary fragment payloads as records from
// a peer: each is delivered or refused with an error, never read past
// its end. The seeds are the ring's records plus a Link record.
func FuzzQueuedRecord(f *testing.F) {
	for _, s := range ringSeeds() {
		f.Add(s.data)
	}
	f.Add(record(kindLink, 0, 0, 0))
	f.Add(append(record(kindLink, 0, 0, 0), 1, 2, 3))
	ts, _ := queueGroup(f, 2, nil)
	tr, rl := ts[0], ts[0].peers[1]
	f.Fuzz(func(t *testing.T, rec []byte) {
		if len(rec) > fragSlotSize-fragHeader {
			rec = rec[:fragSlotSize-fragHeader]
		}
		err := tr.handleQueued(rl, slices.Clone(rec))
		if err == nil && (len(rec) < recHeader || int(binary.LittleEndian.Uint32(rec)) != len(rec)) {
			t.Fatalf("a record of %d bytes claiming %d accepted", len(rec), binary.LittleEndian.Uint32(append(slices.Clone(rec), 0, 0, 0, 0)))
		}
	})
}

// TestOutPoolTake: records take fragments of their size, growing the
// pool a step at a time; a small record takes a large fragment once the
// small ones are all out and at their limit, never the other way round;
// a fragment given back is taken again before the pool grows.
func TestOutPoolTake(t *testing.T) {
	const small, large = smallStep, 2
	mem := alignedBytes(poolBytes(small, large))
	p := newOutPool(newFragPool(mem, small, smallFragSize, fragSlotSize), 0)
	var got []int
	for range small {
		s, ok, err := p.take(24)
		if !ok || err != nil || s >= small {
			t.Fatalf("small record: slot %d, %v, %v", s, ok, err)
		}
		got = append(got, s)
	}
	if s, ok, _ := p.take(24); !ok || s < small {
		t.Fatalf("small record with the small fragments out: slot %d, %v; want a large one", s, ok)
	}
	if s, ok, _ := p.take(fragSlotSize - fragHeader); !ok || s < small {
		t.Fatalf("large record: slot %d, %v", s, ok)
	}
	if s, ok, _ := p.take(fragSlotSize - fragHeader); ok {
		t.Fatalf("large record with every large fragment out: slot %d", s)
	}
	if err := p.give(got[3]); err != nil {
		t.Fatal(err)
	}
	if s, ok, _ := p.take(24); !ok || s != got[3] {
		t.Fatalf("after a return: slot %d, %v; want %d again", s, ok, got[3])
	}
	if err := p.give(got[3] + 1000); err == nil {
		t.Fatal("a slot never given out was taken back")
	}
	if b := p.bytes(); b != int64(poolBytes(small, large)) {
		t.Fatalf("pool holds %d bytes, want %d", b, poolBytes(small, large))
	}
}
