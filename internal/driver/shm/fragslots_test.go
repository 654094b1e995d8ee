package shm

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"
)

func TestFragSlots(t *testing.T) {
	a := newFragSlots(3)
	var got []int
	for {
		s, ok := a.take()
		if !ok {
			break
		}
		got = append(got, s)
	}
	if len(got) != 3 || got[0] != 0 || a.outstanding() != 3 {
		t.Fatalf("took %v (%d out), want the 3 slots from 0", got, a.outstanding())
	}
	for _, tc := range []struct {
		slot int
		ok   bool
	}{{1, true}, {1, false}, {7, false}, {-1, false}, {0, true}} {
		if err := a.give(tc.slot); (err == nil) != tc.ok || err != nil && !errors.Is(err, errCorruptFifo) {
			t.Errorf("give(%d): %v, want ok %v", tc.slot, err, tc.ok)
		}
	}
	if s, ok := a.take(); !ok || s != 0 || a.outstanding() != 2 {
		t.Errorf("take after giving 1 then 0: %d %v (%d out), want 0, the last given", s, ok, a.outstanding())
	}
}

// TestFragmentLoop: a sender posts numbered messages into a receiver's
// queue from a pool of a few slots; the receiver gives each fragment back
// through the sender's own queue, and the sender reuses the slot. Every
// message arrives once, in order, and the pool never has more out than
// its slots.
func TestFragmentLoop(t *testing.T) {
	const slots, msgs, slotSize = 4, 5000, 64
	pools := []fragPool{
		newFragPool(alignedBytes(slots*slotSize), 0, 0, slotSize), // the sender's
		newFragPool(alignedBytes(slots*slotSize), 0, 0, slotSize), // the receiver's, unused
	}
	queue := func() *fifo {
		q, err := newFifo(alignedBytes(FifoHeaderSize), pools)
		if err != nil {
			t.Fatal(err)
		}
		q.reset()
		return q
	}
	toReceiver, toSender := queue(), queue()
	var wg sync.WaitGroup
	wg.Add(1)
	var recvErr error
	go func() { // the receiver
		defer wg.Done()
		for want := uint64(0); want < msgs; {
			r, payload, ok, err := toReceiver.pop()
			if err != nil {
				recvErr = err
				return
			}
			if !ok {
				continue
			}
			if k := binary.LittleEndian.Uint64(payload); k != want {
				recvErr = errors.New("out of order")
				return
			}
			want++
			if err := toSender.push(r, 0); err != nil { // give it back
				recvErr = err
				return
			}
		}
	}()
	mine := newFragSlots(slots)
	for k := uint64(0); k < msgs; {
		for { // take back what the receiver returned
			r, _, ok, err := toSender.pop()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if r.owner() != 0 {
				t.Fatalf("returned fragment of rank %d", r.owner())
			}
			if err := mine.give(r.slot()); err != nil {
				t.Fatal(err)
			}
		}
		s, ok := mine.take()
		if !ok {
			continue // every slot out: wait for returns
		}
		binary.LittleEndian.PutUint64(pools[0].payload(s), k)
		if err := toReceiver.push(makeFragRef(0, s), 8); err != nil {
			t.Fatal(err)
		}
		k++
	}
	wg.Wait()
	if recvErr != nil {
		t.Fatal(recvErr)
	}
}
