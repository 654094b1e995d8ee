package tcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/commtune/commtune/internal/driver"
)

// piecer is a Handler whose region (handle 1) hands out at most k bytes
// per Region call, as a receive made of segments does; it checks that the
// pieces are asked for in order and that PutDone reports each Put once.
type piecer struct {
	t      *testing.T
	region []byte
	k      int
	empty  bool // hand out no room at all: a broken handler
	next   int64
	start  int64
	calls  int
	done   []putEvent
}

func (h *piecer) Packet(int, []byte) error { return nil }

func (h *piecer) Region(peer int, region uint64, offset int64, n int) ([]byte, error) {
	if region != 1 || offset < 0 || n < 0 || offset+int64(n) > int64(len(h.region)) {
		return nil, errors.New("out of bounds")
	}
	if h.calls > 0 && offset != h.next {
		h.t.Errorf("Region at %d, want the next piece at %d", offset, h.next)
	}
	if h.calls == 0 {
		h.start = offset
	}
	h.calls++
	if h.empty {
		return nil, nil
	}
	n = min(n, h.k)
	h.next = offset + int64(n)
	return h.region[offset : offset+int64(n)], nil
}

func (h *piecer) PutDone(peer int, region uint64, offset int64, n int) {
	if offset != h.start || offset+int64(n) != h.next {
		h.t.Errorf("PutDone(%d, %d) after pieces [%d, %d)", offset, n, h.start, h.next)
	}
	h.done = append(h.done, putEvent{peer, region, offset, n})
	h.calls = 0
}

func (h *piecer) Idle(driver.Rail, error) {}
func (h *piecer) PeerLost(int, error)     {}

// TestDecoderPieces: a Put lands whole and in order however the region
// hands out its memory and however reads split the stream, through the
// staging buffer and through direct reads alike; a handler that gives no
// room is a protocol error, not a loop.
func TestDecoderPieces(t *testing.T) {
	for _, size := range []int{0, 1, 37, directReadMin*3 + 5} {
		for _, k := range []int{1, 5, 4096, 1 << 30} {
			for _, chunk := range []int{1, 4093, 1 << 30} {
				if k == 1 && size > 1000 || chunk == 1 && size > 1000 {
					continue // a byte at a time over 48 KiB proves nothing more
				}
				t.Run(fmt.Sprintf("%dB/piece %d/read %d", size, k, chunk), func(t *testing.T) {
					payload := pattern(size, 5)
					h := &piecer{t: t, region: make([]byte, size+20), k: k}
					stream := cat(putFrame(1, 7, payload), putFrame(1, 3, payload[:size/2]))
					d := newDecoder(h, 2, testMaxPacket)
					src := chunkSource(stream, chunk)
					var err error
					for i := 0; err == nil; i++ {
						if i > 4*len(stream)+8 {
							t.Fatal("decoder made no progress")
						}
						_, err = d.run(src)
					}
					if !errors.Is(err, io.EOF) {
						t.Fatalf("run: %v", err)
					}
					want := []putEvent{{2, 1, 7, size}, {2, 1, 3, size / 2}}
					if len(h.done) != 2 || h.done[0] != want[0] || h.done[1] != want[1] {
						t.Fatalf("PutDone %+v, want %+v", h.done, want)
					}
					// The second Put rewrote [3, 3+size/2) with the payload's
					// first half.
					exp := make([]byte, size+20)
					copy(exp[7:], payload)
					copy(exp[3:], payload[:size/2])
					if !bytes.Equal(h.region, exp) {
						t.Fatal("region differs")
					}
				})
			}
		}
	}
	t.Run("no room", func(t *testing.T) {
		h := &piecer{t: t, region: make([]byte, 100), k: 10, empty: true}
		d := newDecoder(h, 2, testMaxPacket)
		_, err := d.run(chunkSource(putFrame(1, 0, pattern(20, 1)), 1<<30))
		if !errors.Is(err, driver.ErrProtocol) || len(h.done) != 0 {
			t.Fatalf("run: %v, %d PutDone", err, len(h.done))
		}
	})
}

// TestPutPiecesOverTCP: Puts and Packets whose iovec has more parts than
// one writev takes (IOV_MAX), some empty, cross a real connection into a
// region handed out in small pieces, whole frames and chunked ones.
func TestPutPiecesOverTCP(t *testing.T) {
	many := func(b []byte, k int) [][]byte {
		var iov [][]byte
		for i := 0; len(b) > 0; i++ {
			n := min(k, len(b))
			iov = append(iov, b[:n])
			if i%7 == 0 {
				iov = append(iov, nil)
			}
			b = b[n:]
		}
		return iov
	}
	tests := []struct {
		name  string
		size  int
		part  int // bytes per iovec part
		piece int // bytes per Region piece
		chunk int // putChunk (0: default)
	}{
		{"2000 parts of 8 bytes, pieces of 3", 16000, 8, 3, 0},
		{"2000 parts of 8 bytes, pieces of 1000", 16000, 8, 1000, 0},
		{"large parts, small pieces", 1 << 20, 64 << 10, 4093, 0},
		{"small parts, large pieces", 1 << 20, 100, 300 << 10, 0},
		{"chunked frames", 50000, 8, 777, 9000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := mesh(t, 2, 1, nil)
			a, b := nodes[0], nodes[1]
			if tc.chunk > 0 {
				a.tr.putChunk = tc.chunk // before any Post
			}
			b.rec.piece.Store(int64(tc.piece))
			b.rec.region(4, tc.size+11)
			payload := pattern(tc.size, 4)
			r := a.tr.Rails(1)[0]
			send(t, a.rec, r, &driver.Frame{Kind: driver.Put, Region: 4, Offset: 11, Iov: many(payload, tc.part)})
			landed := 0
			for landed < tc.size {
				ev := recv(t, b.rec.puts, "PutDone")
				if ev.offset != int64(11+landed) {
					t.Fatalf("PutDone at %d, want %d", ev.offset, 11+landed)
				}
				landed += ev.n
			}
			if landed != tc.size || !b.rec.holds(4, 11, payload) {
				t.Fatalf("%d bytes landed; region holds the payload: %v", landed, b.rec.holds(4, 11, payload))
			}
			if tc.size <= 1<<20 && tc.chunk == 0 {
				body := payload[:min(tc.size, 8<<20)]
				send(t, a.rec, r, &driver.Frame{Kind: driver.Packet, Iov: many(body, tc.part)})
				if ev := recv(t, b.rec.packets, "Packet"); !bytes.Equal(ev.body, body) {
					t.Fatal("gathered Packet differs")
				}
			}
		})
	}
}
