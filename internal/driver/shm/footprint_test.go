package shm

import "testing"

func TestFootprintFor(t *testing.T) {
	cases := []struct {
		ranks, ring, chunk, budget int
		queue                      QueueMode
		wantRing                   int
		wantTalking                int64
		wantErr                    bool
	}{
		{2, 0, 0, 0, QueueOff, DefaultRingSize, headerPages + pageSize + DefaultRingSize, false}, // one whole ring: under the budget
		{8, 0, 0, 0, QueueOff, DefaultRingSize, headerPages + 7*pageSize + 7*DefaultRingSize, false},
		{9, 0, 0, 0, QueueOff, DefaultRingSize, headerPages + 8*pageSize + DefaultBudget, false},
		{16, 0, 0, 0, QueueOff, DefaultRingSize, headerPages + 15*pageSize + DefaultBudget, false},
		{34, 0, 0, 0, QueueOff, DefaultRingSize / 2, headerPages + 33*pageSize + nodeBudget/34, false},
		{33, 0, 0, 0, QueueOff, DefaultRingSize, headerPages + 32*pageSize + nodeBudget/33, false}, // 32 peers × 2 MiB = the capacity bound
		{64, 0, 0, 0, QueueOff, DefaultRingSize / 2, headerPages + 63*pageSize + 4<<20, false},
		{256, 0, 0, 0, QueueOff, 256 << 10, headerPages + 255*pageSize + MinBudget, false},    // shrunk to its floor
		{512, 0, 0, 0, QueueOff, 256 << 10, headerPages + 511*(pageSize+populateStep), false}, // first steps alone pass the budget
		{256, 1 << 20, 0, 0, QueueOff, 1 << 20, headerPages + 255*pageSize + MinBudget, false},
		{256, 0, 0, 512 << 10, QueueOff, 256 << 10, headerPages + 255*(pageSize+populateStep), false}, // a budget set
		// The queue path: at most maxFastBoxes fast boxes (a page each), the
		// pool's first step of each size while talking.
		{64, 0, 0, 0, QueueAuto, 0, headerPages + maxFastBoxes*pageSize + int64(poolBytes(smallStep, poolStep)), false},
		{256, 0, 0, 0, QueueAuto, 0, headerPages + maxFastBoxes*pageSize + int64(poolBytes(smallStep, poolStep)), false},
		{4, 0, 0, 0, QueueOn, 0, headerPages + 3*pageSize + int64(poolBytes(smallStep, poolStep)), false},
		{8, 3000, 0, 0, QueueOff, 0, 0, true}, // not a power of two
		{8, 0, 0, 1000, QueueOff, 0, 0, true}, // a budget under a page
	}
	for _, tc := range cases {
		f, err := FootprintFor(tc.ranks, tc.ring, tc.chunk, tc.budget, tc.queue)
		if (err != nil) != tc.wantErr {
			t.Fatalf("%d ranks, ring %d: err %v", tc.ranks, tc.ring, err)
		}
		if err != nil {
			continue
		}
		if f.RingSize != tc.wantRing {
			t.Errorf("%d ranks: ring %d, want %d", tc.ranks, f.RingSize, tc.wantRing)
		}
		if f.Talking != tc.wantTalking {
			t.Errorf("%d ranks: %d bytes with every peer talking, want %d", tc.ranks, f.Talking, tc.wantTalking)
		}
		queue := tc.queue == QueueOn || tc.queue == QueueAuto && tc.ranks > QueueRanks
		first := int64(pageSize + populateStep)
		if queue {
			first = pageSize
		}
		if f.AtStart != headerPages || f.PeerFirst != first || f.PeerMax != int64(pageSize+f.RingSize) ||
			f.Max != headerPages+int64(f.Rings)*f.PeerMax+f.PoolMax || f.Queue != queue {
			t.Errorf("%d ranks: %+v", tc.ranks, f)
		}
	}
}
