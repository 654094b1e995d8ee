package shm

import (
	"strings"
	"testing"
)

// TestSizeRings: either size set alone is valid, the other following it;
// only the two set together conflict, and the error names both.
func TestSizeRings(t *testing.T) {
	local := func(n int) []int { return make([]int, n) }
	tests := []struct {
		name        string
		ring, chunk int
		local       int
		wantRing    int
		wantChunk   int
		wantErr     []string
	}{
		{"defaults", 0, 0, 2, DefaultRingSize, DefaultChunkSize, nil},
		{"many ranks take the queue's fast boxes, no ring data", 0, 0, 200, MinRingSize, MinRingSize / 4, nil},
		{"a small ring takes a smaller chunk", 64 << 10, 0, 2, 64 << 10, 16 << 10, nil},
		{"the smallest ring", MinRingSize, 0, 2, MinRingSize, MinRingSize / 4, nil},
		{"a large chunk takes a larger ring", 0, 3 << 20, 2, 16 << 20, 3 << 20, nil},
		{"a chunk keeps its ring among many ranks", 0, 256 << 10, 200, 1 << 20, 256 << 10, nil},
		{"rings shrink among many ranks without the queue", 0, 0, 200, 256 << 10, 64 << 10, nil},
		{"both set and agreeing", 8 << 10, 2 << 10, 2, 8 << 10, 2 << 10, nil},
		{"both set and conflicting", 64 << 10, 1 << 20, 2, 0, 0, []string{"ChunkSize=1048576 with", "RingSize=65536", "quarter"}},
		{"ring not a power of two", 3000, 0, 2, 0, 0, []string{"RingSize=3000", "power of two"}},
		{"ring too small", 2048, 0, 2, 0, 0, []string{"RingSize=2048"}},
		{"ring too large", 2 << 30, 0, 2, 0, 0, []string{"RingSize"}},
		{"chunk too large for any ring", 0, 1 << 30, 2, 0, 0, []string{"ChunkSize"}},
		{"negative chunk", 0, -1, 2, 0, 0, []string{"ChunkSize=-1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{RingSize: tc.ring, ChunkSize: tc.chunk, Local: local(tc.local)}
			if strings.Contains(tc.name, "without the queue") {
				cfg.Queue = QueueOff
			}
			err := cfg.sizeRings()
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("ring %d chunk %d accepted", cfg.RingSize, cfg.ChunkSize)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%v: lacks %q", err, w)
					}
				}
				return
			}
			if err != nil || cfg.RingSize != tc.wantRing || cfg.ChunkSize != tc.wantChunk {
				t.Fatalf("ring %d chunk %d (%v), want %d and %d", cfg.RingSize, cfg.ChunkSize, err, tc.wantRing, tc.wantChunk)
			}
		})
	}
}
