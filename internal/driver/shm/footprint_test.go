package shm

import "testing"

func TestFootprintFor(t *testing.T) {
	cases := []struct {
		ranks, ring, chunk int
		wantRing           int
		wantErr            bool
	}{
		{2, 0, 0, DefaultRingSize, false},
		{33, 0, 0, DefaultRingSize, false}, // 32 peers × 2 MiB = the budget
		{34, 0, 0, DefaultRingSize / 2, false},
		{256, 0, 0, 256 << 10, false}, // shrunk to its floor
		{256, 1 << 20, 0, 1 << 20, false},
		{8, 3000, 0, 0, true}, // not a power of two
	}
	for _, tc := range cases {
		f, err := FootprintFor(tc.ranks, tc.ring, tc.chunk)
		if (err != nil) != tc.wantErr {
			t.Fatalf("%d ranks, ring %d: err %v", tc.ranks, tc.ring, err)
		}
		if err != nil {
			continue
		}
		if f.RingSize != tc.wantRing {
			t.Errorf("%d ranks: ring %d, want %d", tc.ranks, f.RingSize, tc.wantRing)
		}
		if f.AtStart != pageSize || f.PeerFirst != pageSize+populateStep || f.PeerMax != int64(pageSize+f.RingSize) ||
			f.Max != pageSize+int64(tc.ranks-1)*f.PeerMax {
			t.Errorf("%d ranks: %+v", tc.ranks, f)
		}
	}
}
