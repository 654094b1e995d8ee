package shm

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/commtune/commtune/internal/driver"
)

// parts cuts b into parts of k bytes, with an empty part every seventh.
func parts(b []byte, k int) [][]byte {
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

// TestPutPieces: by every Put method, through the ring (copy, cachefree)
// and the pipe (vmsplice), a Put whose iovec has more parts than IOV_MAX,
// or a few large ones, lands whole and in order into a region that hands
// out its memory a few bytes at a time, with one PutDone per record
// adding up to the Put.
func TestPutPieces(t *testing.T) {
	tests := []struct {
		size, part, piece int
	}{
		{16000, 8, 3},    // 2000 parts
		{16000, 8, 1000}, // parts gathered into one record, pieces of 1000
		{200 << 10, 64 << 10, 4093},
		{200 << 10, 100, 50 << 10},
		{5, 1, 1},
	}
	for _, m := range methods {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%v/%dB/parts of %d/pieces of %d", m, tc.size, tc.part, tc.piece), func(t *testing.T) {
				a, _, ha, hb := pair(t, nil)
				ra := a.Rails(1)[0]
				payload := make([]byte, tc.size)
				for i := range payload {
					payload[i] = byte(i*11 + i>>9)
				}
				dst := make([]byte, tc.size+10)
				hb.mu.Lock()
				hb.regions[7] = dst
				hb.piece = tc.piece
				hb.mu.Unlock()
				f := &driver.Frame{Kind: driver.Put, Method: m, Region: 7, Offset: 3, Iov: parts(payload, tc.part)}
				done, err := ra.Post(f)
				if err != nil {
					t.Fatal(err)
				}
				if !done {
					ra.(driver.Flusher).Flush()
					if err := <-ha.idle; err != nil {
						t.Fatal(err)
					}
				}
				waitFor(t, "the put", func() bool { return hb.landed(7) == tc.size })
				hb.mu.Lock()
				defer hb.mu.Unlock()
				if !bytes.Equal(dst[3:3+tc.size], payload) || !bytes.Equal(dst[:3], make([]byte, 3)) || !bytes.Equal(dst[3+tc.size:], make([]byte, 7)) {
					t.Fatal("region differs")
				}
			})
		}
	}
}

// TestPacketManyParts: a Packet frame with more iovec parts than IOV_MAX
// arrives as one body.
func TestPacketManyParts(t *testing.T) {
	a, _, _, hb := pair(t, nil)
	body := make([]byte, 16000)
	for i := range body {
		body[i] = byte(i * 3)
	}
	if done, err := a.Rails(1)[0].Post(&driver.Frame{Kind: driver.Packet, Iov: parts(body, 8)}); !done || err != nil {
		t.Fatalf("Post: %v %v", done, err)
	}
	<-hb.pkt
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if len(hb.packets) != 1 || !bytes.Equal(hb.packets[0], body) {
		t.Fatal("packet differs")
	}
}

// TestPutNoRoom: a handler that hands out no room for a Put's bytes is a
// protocol error (the peer is dropped), never a loop.
func TestPutNoRoom(t *testing.T) {
	a, _, _, hb := pair(t, nil)
	hb.mu.Lock()
	hb.regions[7] = make([]byte, 64)
	hb.noRoom = true
	hb.mu.Unlock()
	if _, err := a.Rails(1)[0].Post(&driver.Frame{Kind: driver.Put, Region: 7, Iov: [][]byte{{1, 2, 3}}}); err != nil {
		t.Fatal(err)
	}
	if err := <-hb.lost; !errors.Is(err, driver.ErrProtocol) {
		t.Fatalf("peer lost with %v", err)
	}
	if hb.landed(7) != 0 {
		t.Fatal("PutDone for a Put that did not land")
	}
}

// TestPullV: one vectored pull scatters the peer's bytes over parts with
// empties among them, more parts than one process_vm_readv takes, and in
// two parallel halves when large.
func TestPullV(t *testing.T) {
	tests := []struct {
		name     string
		size     int
		part     int
		parallel bool
	}{
		{"one part", 4096, 4096, false},
		{"3000 parts", 24000, 8, false},
		{"odd parts", 100000, 999, false},
		{"parallel halves", 3<<20 + 17, 300 << 10, true},
		{"parallel, many parts", 1<<20 + 3, 512, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, _, _, _ := pair(t, func(c *Config) { c.ParallelPull = tc.parallel })
			ra := a.Rails(1)[0]
			if !ra.Caps().SingleCopy {
				t.Skip("process_vm_readv is not allowed here")
			}
			src := make([]byte, tc.size)
			for i := range src {
				src[i] = byte(i*5 + i>>10)
			}
			dst := make([]byte, tc.size)
			iov := parts(dst, tc.part)
			keep := append([][]byte(nil), iov...)
			if err := ra.(driver.VecPuller).PullV(iov, uint64(uintptrOf(src))); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dst, src) {
				t.Fatal("pulled bytes differ")
			}
			for i := range iov {
				if len(iov[i]) != len(keep[i]) || (len(iov[i]) > 0 && &iov[i][0] != &keep[i][0]) {
					t.Fatal("PullV changed the caller's list")
				}
			}
		})
	}
}
