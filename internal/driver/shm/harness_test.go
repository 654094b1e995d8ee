package shm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/driver"
)

// recorder is a Handler that keeps packets, lands Puts in registered
// regions and reports events on channels.
type recorder struct {
	mu      sync.Mutex
	packets [][]byte
	regions map[uint64][]byte
	puts    map[uint64]int // bytes landed per region
	idle    chan error
	lost    chan error
	pkt     chan struct{}
	piece   int  // when > 0, Region hands out at most this many bytes a call
	noRoom  bool // Region hands out nothing: a broken handler
}

func newRecorder() *recorder {
	return &recorder{regions: map[uint64][]byte{}, puts: map[uint64]int{}, idle: make(chan error, 64), lost: make(chan error, 8), pkt: make(chan struct{}, 1<<16)}
}

func (h *recorder) Packet(peer int, body []byte) error {
	h.mu.Lock()
	h.packets = append(h.packets, append([]byte(nil), body...))
	h.mu.Unlock()
	select {
	case h.pkt <- struct{}{}:
	default: // nobody counts this many (a fuzzer's packets)
	}
	return nil
}

func (h *recorder) Region(peer int, region uint64, off int64, n int) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.regions[region]
	if b == nil || off < 0 || int(off)+n > len(b) {
		return nil, driver.ProtocolError("region %d [%d,+%d)", region, off, n)
	}
	if h.noRoom {
		return nil, nil
	}
	if h.piece > 0 && n > h.piece {
		n = h.piece
	}
	return b[off : int(off)+n], nil
}

func (h *recorder) PutDone(peer int, region uint64, off int64, n int) {
	h.mu.Lock()
	h.puts[region] += n
	h.mu.Unlock()
}

func (h *recorder) Idle(r driver.Rail, err error) { h.idle <- err }
func (h *recorder) PeerLost(peer int, err error)  { h.lost <- err }

func (h *recorder) landed(region uint64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.puts[region]
}

// pair builds two connected transports (ranks 0 and 1) in this process.
func pair(t testing.TB, mod func(*Config)) (a, b *Transport, ha, hb *recorder) {
	t.Helper()
	ts, hs := group(t, 2, mod)
	return ts[0], ts[1], hs[0], hs[1]
}

// group builds n connected transports (ranks 0 to n-1) in this process.
func group(t testing.TB, n int, mod func(*Config)) ([]*Transport, []*recorder) {
	t.Helper()
	dir := shmDir(t)
	job := fmt.Sprintf("t%d", len(dir))
	local := make([]int, n)
	for i := range local {
		local[i] = i
	}
	ts, hs := make([]*Transport, n), make([]*recorder, n)
	for rank := range n {
		hs[rank] = newRecorder()
		cfg := Config{Rank: rank, Job: job, Local: local, Handler: hs[rank], Dir: dir, RingSize: 64 << 10, ChunkSize: 8 << 10,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if mod != nil {
			mod(&cfg)
		}
		tr, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ts[rank] = tr
	}
	for _, tr := range ts {
		if err := tr.Connect(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, tr := range ts {
		tr.Unlink()
	}
	t.Cleanup(func() {
		for _, tr := range ts {
			tr.Close()
		}
	})
	return ts, hs
}

// shmDir returns a directory for one test's segments: in /dev/shm, where
// segments live in use (tmpfs: memory is what a page costs there), when
// it exists.
func shmDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp(DefaultDir, "commtune-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// heardClose waits for rank me's handler to hear peer close: PeerLost
// with driver.ErrPeerClosed.
func heardClose(t *testing.T, h *recorder, me, peer int) {
	t.Helper()
	select {
	case err := <-h.lost:
		if !errors.Is(err, driver.ErrPeerClosed) {
			t.Errorf("rank %d: rank %d lost with %v, want ErrPeerClosed", me, peer, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("rank %d never heard rank %d close", me, peer)
	}
}
