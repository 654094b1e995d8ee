package tcp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/driver"
)

// Wire builders for tests: any length and kind, consistent or not.
func frameHdr(length uint32, kind byte) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, length), kind, 0, 0, 0)
}

func packetFrame(body []byte) []byte {
	b := frameHdr(uint32(packetHeaderSize-lengthSize+len(body)), kindPacket)
	b = binary.LittleEndian.AppendUint64(b, 0)
	return append(b, body...)
}

func putFrame(region, offset uint64, payload []byte) []byte {
	b := frameHdr(uint32(putHeaderSize-lengthSize+len(payload)), kindPut)
	b = binary.LittleEndian.AppendUint64(b, region)
	b = binary.LittleEndian.AppendUint64(b, offset)
	return append(b, payload...)
}

// paddedPacket and paddedPut build frames with pad zero bytes between
// header and payload, as the sender does to keep large payloads out of the
// kernel copy's aliasing window.
func paddedPacket(body []byte, pad int) []byte {
	var h header
	return append(append([]byte(nil), h.packet(len(body), pad)...), body...)
}

func paddedPut(region uint64, offset int64, payload []byte, pad int) []byte {
	var h header
	return append(append([]byte(nil), h.put(region, offset, len(payload), pad)...), payload...)
}

// testMaxPacket is the decoder's Packet limit in these tests.
const testMaxPacket = 4096

func TestDecoder(t *testing.T) {
	tests := []struct {
		name    string
		stream  []byte
		want    error // what next finally returns
		packets int   // Packets delivered before that
		puts    int   // Puts delivered before that
	}{
		{"empty stream", nil, io.EOF, 0, 0},
		{"valid frames", cat(packetFrame(nil), packetFrame([]byte("abc")), putFrame(1, 10, []byte("xyz")),
			putFrame(1, 0, nil), packetFrame(make([]byte, testMaxPacket)), byeFrame[:]), io.EOF, 3, 2},
		{"oversize packet", frameHdr(testMaxPacket+13, kindPacket), driver.ErrProtocol, 0, 0},
		{"huge packet", frameHdr(math.MaxUint32, kindPacket), driver.ErrProtocol, 0, 0},
		{"put beyond region", putFrame(1, 90, make([]byte, 20)), driver.ErrProtocol, 0, 0},
		{"put to unknown region", putFrame(2, 0, []byte("a")), driver.ErrProtocol, 0, 0},
		{"put offset overflows", putFrame(1, 1<<63, nil), driver.ErrProtocol, 0, 0},
		{"huge put", cat(frameHdr(math.MaxUint32, kindPut), make([]byte, 16)), driver.ErrProtocol, 0, 0},
		{"short put header", frameHdr(19, kindPut), driver.ErrProtocol, 0, 0},
		{"short packet header", frameHdr(11, kindPacket), driver.ErrProtocol, 0, 0},
		{"reserved bytes ignored", cat(append(frameHdr(4, kindBye)[:6], 0xff, 0xff)), io.EOF, 0, 0},
		{"padded frames", cat(paddedPacket([]byte("abc"), 5), paddedPut(1, 4, []byte("xyz"), 63)), io.EOF, 1, 1},
		{"pad too large", append(frameHdr(100, kindPacket)[:5], 64, 0, 0), driver.ErrProtocol, 0, 0},
		{"pad longer than frame", append(frameHdr(20, kindPacket)[:5], 30, 0, 0), driver.ErrProtocol, 0, 0},
		{"pad on bye", append(frameHdr(4, kindBye)[:5], 1, 0, 0), driver.ErrProtocol, 0, 0},
		{"unknown kind", cat(packetFrame([]byte("ok")), frameHdr(4, 9)), driver.ErrProtocol, 1, 0},
		{"kind zero", frameHdr(4, 0), driver.ErrProtocol, 0, 0},
		{"zero length", frameHdr(0, kindPacket), driver.ErrProtocol, 0, 0},
		{"bye with payload", frameHdr(5, kindBye), driver.ErrProtocol, 0, 0},
		{"frame after bye", cat(byeFrame[:], packetFrame(nil)), driver.ErrProtocol, 0, 0},
		{"handler rejects packet", packetFrame([]byte("reject me")), driver.ErrProtocol, 0, 0},
		{"truncated header", []byte{5, 0, 0}, errTruncated, 0, 0},
		{"truncated packet header", cat(frameHdr(20, kindPacket), make([]byte, 3)), errTruncated, 0, 0},
		{"truncated packet", cat(frameHdr(20, kindPacket), make([]byte, 8)), errTruncated, 0, 0},
		{"truncated put fields", cat(frameHdr(30, kindPut), make([]byte, 8)), errTruncated, 0, 0},
		{"truncated put payload", putFrame(1, 0, make([]byte, 50))[:40], errTruncated, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newFuzzHandler()
			// Whole stream at once, and one byte at a time with the source
			// blocking in between: the decoder must not care where reads end.
			for _, chunk := range []int{len(tt.stream) + 1, 1} {
				h = newFuzzHandler()
				d := newDecoder(h, 3, testMaxPacket)
				src := chunkSource(tt.stream, chunk)
				var err error
				for i := 0; err == nil; i++ {
					if i > 2*len(tt.stream)+2 {
						t.Fatal("decoder made no progress")
					}
					_, err = d.run(src)
				}
				if !errors.Is(err, tt.want) {
					t.Fatalf("chunk %d: run: %v, want %v", chunk, err, tt.want)
				}
				if _, again := d.run(src); again != err {
					t.Fatalf("end is not sticky: %v then %v", err, again)
				}
				if cap(d.body) > testMaxPacket {
					t.Errorf("packet buffer grew to %d bytes, past MaxPacket", cap(d.body))
				}
			}
			if h.packets != tt.packets || h.puts != tt.puts {
				t.Errorf("delivered %d packets and %d puts, want %d and %d", h.packets, h.puts, tt.packets, tt.puts)
			}
		})
	}
}

// chunkSource serves data chunk bytes at a time, reporting errWouldBlock
// between chunks, then io.EOF.
func chunkSource(data []byte, chunk int) source {
	blocked := false
	return func(p []byte) (int, error) {
		if len(data) == 0 {
			return 0, io.EOF
		}
		if blocked {
			blocked = false
			return 0, errWouldBlock
		}
		blocked = true
		n := copy(p, data[:min(chunk, len(data))])
		data = data[n:]
		return n, nil
	}
}

// fuzzHandler is a Handler for decoder tests and fuzzing: one 100-byte
// region (handle 1), and Packets starting with "reject" are refused.
type fuzzHandler struct {
	region        []byte
	packets, puts int
	lastPut       [3]int64 // offset, n, and 1 while a Put is between Region and PutDone
}

func newFuzzHandler() *fuzzHandler { return &fuzzHandler{region: make([]byte, 100)} }

func (h *fuzzHandler) Packet(peer int, body []byte) error {
	if len(body) > testMaxPacket {
		panic("Packet body longer than MaxPacket")
	}
	if bytes.HasPrefix(body, []byte("reject")) {
		return errors.New("rejected")
	}
	h.packets++
	return nil
}

func (h *fuzzHandler) Region(peer int, region uint64, offset int64, n int) ([]byte, error) {
	if region != 1 || offset < 0 || n < 0 || offset > int64(len(h.region)) || int64(n) > int64(len(h.region))-offset {
		return nil, errors.New("out of bounds")
	}
	h.lastPut = [3]int64{offset, int64(n), 1}
	return h.region[offset : offset+int64(n)], nil
}

func (h *fuzzHandler) PutDone(peer int, region uint64, offset int64, n int) {
	if h.lastPut != [3]int64{offset, int64(n), 1} {
		panic("PutDone without a matching Region")
	}
	h.lastPut[2] = 0
	h.puts++
}

func (h *fuzzHandler) Idle(r driver.Rail, err error) {}
func (h *fuzzHandler) PeerLost(peer int, err error)  {}

// TestMalformedFrames sends bad frames from an authenticated fake rank 1 to
// a live Transport: the connection is dropped, the peer reported lost once
// with the reason, the violation logged, and Posts to the peer fail.
func TestMalformedFrames(t *testing.T) {
	tests := []struct {
		name  string
		bytes []byte
		want  error
		warn  string // expected in the Warn log; "" if not a violation
	}{
		{"oversize packet", frameHdr(DefaultMaxPacket+13, kindPacket), driver.ErrProtocol, "exceeds MaxPacket"},
		{"put beyond region", putFrame(1, 90, make([]byte, 20)), driver.ErrProtocol, "outside its 100 bytes"},
		{"unknown kind", frameHdr(4, 42), driver.ErrProtocol, "unknown frame kind 42"},
		{"handler rejects packet", packetFrame([]byte("x")), driver.ErrProtocol, "test handler rejects packets"},
		{"truncated header", []byte{9, 0}, errTruncated, ""},
		{"closed without bye", nil, io.EOF, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, rec, logs := acceptorUnderTest(t, func(c *Config) { c.ListenAddrs = nil })
			rec.region(1, 100)
			rec.rejectPackets.Store(tt.name == "handler rejects packet")
			c, err := rawPeer(t, tr, 1, 0, testSecret)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Connect(t.Context(), [][]string{tr.Addrs(), nil}); err != nil {
				t.Fatal(err)
			}
			c.Write(tt.bytes)
			if tt.warn == "" {
				c.(interface{ CloseWrite() error }).CloseWrite()
			}
			ev := recv(t, rec.lost, "PeerLost")
			if ev.peer != 1 || !errors.Is(ev.err, tt.want) || !strings.HasPrefix(ev.err.Error(), "tcp rail 0: ") {
				t.Fatalf("PeerLost(%d, %v), want rank 1 and %v", ev.peer, ev.err, tt.want)
			}
			expectClosed(t, c)
			if tt.warn != "" {
				logs.waitLog(t, "level=WARN", "dropping connection to rank 1 rail 0", tt.warn)
			}
			if _, err := tr.Rails(1)[0].Post(&driver.Frame{Kind: driver.Packet}); !errors.Is(err, tt.want) {
				t.Errorf("Post after loss: %v, want %v", err, tt.want)
			}
			none(t, rec.lost, "second PeerLost")
		})
	}
}

// TestPeerLoss covers both ways a peer goes: abruptly (connections vanish
// without Bye) and in order (Close).
func TestPeerLoss(t *testing.T) {
	t.Run("abrupt", func(t *testing.T) {
		nodes := mesh(t, 3, 2, nil)
		// Rank 2 "crashes": its connections close without a Bye.
		nodes[2].tr.mu.Lock()
		rails := append([]*rail(nil), nodes[2].tr.all...)
		nodes[2].tr.mu.Unlock()
		for _, r := range rails {
			r.nc.SetLinger(0) // a reset, as when a process dies with unread data
			r.nc.Close()
		}
		for _, rank := range []int{0, 1} {
			rec := nodes[rank].rec
			start := time.Now()
			ev := recv(t, rec.lost, "PeerLost")
			t.Logf("rank %d noticed the loss of rank 2 after %v: %v", rank, time.Since(start), ev.err)
			if ev.peer != 2 || ev.err == nil || errors.Is(ev.err, driver.ErrPeerClosed) {
				t.Fatalf("rank %d: PeerLost(%d, %v), want rank 2 lost, not closed", rank, ev.peer, ev.err)
			}
			for _, r := range nodes[rank].tr.Rails(2) {
				if _, err := r.Post(&driver.Frame{Kind: driver.Packet}); err == nil {
					t.Errorf("rank %d: Post to lost rank 2 succeeded", rank)
				}
			}
			none(t, rec.lost, "second PeerLost") // two rails, one report
			// The rest of the mesh is unaffected.
			send(t, rec, nodes[rank].tr.Rails(1 - rank)[1], &driver.Frame{Kind: driver.Packet, Iov: [][]byte{[]byte("still here")}})
			recv(t, nodes[1-rank].rec.packets, "Packet")
		}
	})
	// A packet a polling waiter reads may be answered at once on the same
	// socket, and that write may find the peer gone: the rail then fails
	// from inside the poll's hold on the descriptor, and the poll must
	// still return (closing there waited for the poll itself).
	t.Run("failed inside a poll", func(t *testing.T) {
		nodes := mesh(t, 2, 1, nil)
		a, b := nodes[0], nodes[1]
		ra := a.tr.Rails(1)[0]
		a.rec.onPacket = func(int) { ra.(*rail).fail(errors.New("the answer's write failed")) }
		p := ra.(driver.Poller)
		p.StartPolling()
		send(t, b.rec, b.tr.Rails(0)[0], &driver.Frame{Kind: driver.Packet, Iov: [][]byte{[]byte("question")}})
		delivered := make(chan bool, 1)
		go func() {
			for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
				p.Poll()
				select {
				case <-a.rec.packets:
					delivered <- true
					return
				default:
				}
			}
			delivered <- false
		}()
		select {
		case ok := <-delivered:
			if !ok {
				t.Fatal("the packet never reached the polling waiter")
			}
		case <-time.After(2 * wait):
			t.Fatal("a poll whose delivery failed its rail never returned")
		}
		p.StopPolling(false)
		if _, err := ra.Post(&driver.Frame{Kind: driver.Packet}); err == nil {
			t.Error("Post on the failed rail succeeded")
		}
	})
	// A goroutine polling the rails when the peer dies reads the end of the
	// stream itself; the reader goroutine, which left the input to it, got
	// the only readiness event and must still learn of the end.
	for _, orderly := range []bool{false, true} {
		t.Run(fmt.Sprintf("while polled/orderly=%v", orderly), func(t *testing.T) {
			nodes := mesh(t, 2, 1, nil)
			a, b := nodes[0], nodes[1]
			p := a.tr.Rails(1)[0].(driver.Poller)
			p.StartPolling()
			closed := make(chan error, 1)
			if orderly {
				// Close waits for our side to answer the Bye, which only
				// the polling below can read.
				go func() { closed <- b.tr.Close() }()
			} else {
				closed <- nil
				b.tr.mu.Lock()
				r := b.tr.all[0]
				b.tr.mu.Unlock()
				r.nc.Close()
			}
			deadline := time.Now().Add(wait)
			var ev lostEvent
		poll:
			for {
				p.Poll()
				select {
				case ev = <-a.rec.lost:
					break poll
				default:
				}
				if time.Now().After(deadline) {
					t.Fatal("the loss of rank 1 was never reported to a polled rail")
				}
				time.Sleep(100 * time.Microsecond)
			}
			p.StopPolling(false)
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
			if ev.peer != 1 || errors.Is(ev.err, driver.ErrPeerClosed) != orderly {
				t.Fatalf("PeerLost(%d, %v), want rank 1, closed in order: %v", ev.peer, ev.err, orderly)
			}
			// The rail's own side closes too, so nothing of it lingers.
			a.tr.mu.Lock()
			rdone := a.tr.all[0].rdone
			a.tr.mu.Unlock()
			select {
			case <-rdone:
			case <-time.After(wait):
				t.Fatal("the polled rail's reader goroutine never ended")
			}
		})
	}
	t.Run("orderly", func(t *testing.T) {
		nodes := mesh(t, 2, 2, nil)
		a, b := nodes[0], nodes[1]
		// A big Put in flight when Close starts must still arrive whole.
		b.rec.region(1, 16<<20)
		payload := pattern(16<<20, 1)
		done, err := a.tr.Rails(1)[1].Post(&driver.Frame{Kind: driver.Put, Region: 1, Iov: [][]byte{payload}})
		if err != nil {
			t.Fatal(err)
		}
		closed := make(chan error)
		go func() { closed <- a.tr.Close() }()
		if !done {
			if ev := recv(t, a.rec.idles, "Idle"); ev.err != nil {
				t.Fatalf("Idle: %v", ev.err)
			}
		}
		if ev := recv(t, b.rec.puts, "PutDone"); ev.n != len(payload) || !b.rec.holds(1, 0, payload) {
			t.Fatalf("PutDone %+v: the Put in flight at Close did not arrive whole", ev)
		}
		ev := recv(t, b.rec.lost, "PeerLost")
		if ev.peer != 0 || !errors.Is(ev.err, driver.ErrPeerClosed) {
			t.Fatalf("PeerLost(%d, %v), want rank 0 and ErrPeerClosed", ev.peer, ev.err)
		}
		if err := <-closed; err != nil {
			t.Fatalf("Close: %v", err)
		}
		none(t, b.rec.lost, "second PeerLost")
		none(t, a.rec.lost, "PeerLost on the closing side")
		for _, r := range a.tr.Rails(1) {
			if _, err := r.Post(&driver.Frame{Kind: driver.Packet}); !errors.Is(err, net.ErrClosed) {
				t.Errorf("Post on a closed transport: %v, want net.ErrClosed", err)
			}
		}
		for _, r := range b.tr.Rails(0) {
			if _, err := r.Post(&driver.Frame{Kind: driver.Packet}); !errors.Is(err, driver.ErrPeerClosed) {
				t.Errorf("Post to a closed peer: %v, want ErrPeerClosed", err)
			}
		}
		if err := b.tr.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("both close", func(t *testing.T) {
		nodes := mesh(t, 3, 2, nil)
		errs := make(chan error, 3)
		for _, nd := range nodes {
			go func() { errs <- nd.tr.Close() }()
		}
		for range nodes {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	})
}
