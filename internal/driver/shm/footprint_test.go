package shm

import "testing"

func TestFootprintFor(t *testing.T) {
	cases := []struct {
		ranks, ring, chunk, budget int
		wantRing                   int
		wantTalking                int64
		wantErr                    bool
	}{
		{2, 0, 0, 0, DefaultRingSize, pageSize + pageSize + DefaultRingSize, false}, // one whole ring: under the budget
		{8, 0, 0, 0, DefaultRingSize, pageSize + 7*pageSize + 7*DefaultRingSize, false},
		{9, 0, 0, 0, DefaultRingSize, pageSize + 8*pageSize + DefaultBudget, false},
		{16, 0, 0, 0, DefaultRingSize, pageSize + 15*pageSize + DefaultBudget, false},
		{34, 0, 0, 0, DefaultRingSize / 2, pageSize + 33*pageSize + nodeBudget/34, false},
		{33, 0, 0, 0, DefaultRingSize, pageSize + 32*pageSize + nodeBudget/33, false}, // 32 peers × 2 MiB = the capacity bound
		{64, 0, 0, 0, DefaultRingSize / 2, pageSize + 63*pageSize + 4<<20, false},
		{256, 0, 0, 0, 256 << 10, pageSize + 255*pageSize + MinBudget, false},    // shrunk to its floor
		{512, 0, 0, 0, 256 << 10, pageSize + 511*(pageSize+populateStep), false}, // first steps alone pass the budget
		{256, 1 << 20, 0, 0, 1 << 20, pageSize + 255*pageSize + MinBudget, false},
		{256, 0, 0, 512 << 10, 256 << 10, pageSize + 255*(pageSize+populateStep), false}, // a budget set
		{8, 3000, 0, 0, 0, 0, true}, // not a power of two
		{8, 0, 0, 1000, 0, 0, true}, // a budget under a page
	}
	for _, tc := range cases {
		f, err := FootprintFor(tc.ranks, tc.ring, tc.chunk, tc.budget)
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
		if f.AtStart != pageSize || f.PeerFirst != pageSize+populateStep || f.PeerMax != int64(pageSize+f.RingSize) ||
			f.Max != pageSize+int64(tc.ranks-1)*f.PeerMax {
			t.Errorf("%d ranks: %+v", tc.ranks, f)
		}
	}
}
