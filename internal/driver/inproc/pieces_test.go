package inproc

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/commtune/commtune/internal/driver"
)

// piecer is a Handler whose region (handle 1) hands out at most k bytes
// per Region call, as a receive made of segments does.
type piecer struct {
	region []byte
	k      int
	next   int64 // where the next piece must start (-1: a new Put)
	bad    string
	done   [][2]int64 // PutDone offset and length
}

func (h *piecer) Packet(int, []byte) error { return nil }

func (h *piecer) Region(peer int, region uint64, offset int64, n int) ([]byte, error) {
	if region != 1 || offset < 0 || n < 0 || offset+int64(n) > int64(len(h.region)) {
		return nil, driver.ProtocolError("out of bounds")
	}
	if h.next >= 0 && offset != h.next {
		h.bad = fmt.Sprintf("Region at %d, want the next piece at %d", offset, h.next)
	}
	n = min(n, h.k)
	h.next = offset + int64(n)
	return h.region[offset : offset+int64(n)], nil
}

func (h *piecer) PutDone(peer int, region uint64, offset int64, n int) {
	h.done = append(h.done, [2]int64{offset, int64(n)})
	h.next = -1
}

func (h *piecer) Idle(driver.Rail, error) {}
func (h *piecer) PeerLost(int, error)     {}

// TestPutPieces: a Put lands whole and in order however the region hands
// out its memory and however the frame's iovec is cut, with one PutDone.
func TestPutPieces(t *testing.T) {
	payload := make([]byte, 5000)
	for i := range payload {
		payload[i] = byte(i*13 + i>>8)
	}
	iovs := []struct {
		name string
		iov  [][]byte
	}{
		{"one part", [][]byte{payload}},
		{"parts with empties", [][]byte{nil, payload[:1], {}, payload[1:4000], nil, payload[4000:], nil}},
		{"1667 parts of 3 bytes", func() [][]byte {
			var iov [][]byte
			for b := payload; len(b) > 0; b = b[min(len(b), 3):] {
				iov = append(iov, b[:min(len(b), 3)])
			}
			return iov
		}()},
	}
	for _, tc := range iovs {
		for _, k := range []int{1, 2, 7, 4096, 1 << 20} {
			t.Run(fmt.Sprintf("%s/piece %d", tc.name, k), func(t *testing.T) {
				h := &piecer{region: make([]byte, len(payload)+9), k: k, next: -1}
				f := NewFabric(2)
				t0 := f.Attach(0, &recorder{})
				f.Attach(1, h)
				done, err := t0.Rails(1)[0].Post(&driver.Frame{Kind: driver.Put, Region: 1, Offset: 5, Iov: tc.iov})
				if !done || err != nil || h.bad != "" {
					t.Fatalf("Post: %v %v %s", done, err, h.bad)
				}
				if len(h.done) != 1 || h.done[0] != [2]int64{5, int64(len(payload))} {
					t.Fatalf("PutDone %v", h.done)
				}
				if !bytes.Equal(h.region[5:5+len(payload)], payload) || !bytes.Equal(h.region[:5], make([]byte, 5)) || !bytes.Equal(h.region[5+len(payload):], make([]byte, 4)) {
					t.Fatal("region differs")
				}
			})
		}
	}
}

// noRoom hands out nothing: a broken handler.
type noRoom struct{ piecer }

func (h *noRoom) Region(int, uint64, int64, int) ([]byte, error) { return nil, nil }

func TestPutNoRoom(t *testing.T) {
	f := NewFabric(2)
	t0 := f.Attach(0, &recorder{})
	h := &noRoom{}
	f.Attach(1, h)
	if _, err := t0.Rails(1)[0].Post(&driver.Frame{Kind: driver.Put, Region: 1, Iov: [][]byte{{1, 2}}}); !errors.Is(err, driver.ErrProtocol) || len(h.done) != 0 {
		t.Fatalf("Post: %v, %d PutDone", err, len(h.done))
	}
	// An empty Put asks once and lands nothing.
	if done, err := t0.Rails(1)[0].Post(&driver.Frame{Kind: driver.Put, Region: 1}); !done || err != nil || len(h.done) != 1 {
		t.Fatalf("empty Put: %v %v, %d PutDone", done, err, len(h.done))
	}
}
