package tcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/syncbuf"
)

// testSecret is the job secret of every test mesh.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// wait bounds how long a test waits for an event that must happen; it is a
// deadlock guard, not a timing assertion.
const wait = 20 * time.Second

type packetEvent struct {
	peer int
	body []byte // a copy
}

type putEvent struct {
	peer   int
	region uint64
	offset int64
	n      int
}

type idleEvent struct {
	rail driver.Rail
	err  error
}

type lostEvent struct {
	peer int
	err  error
}

// recorder is a fake Handler: it records what it receives on channels and
// serves Put regions from memory it owns.
type recorder struct {
	packets chan packetEvent
	puts    chan putEvent
	idles   chan idleEvent
	lost    chan lostEvent

	mu      sync.Mutex
	regions map[uint64][]byte

	onPacket      func(peer int) // when set (before any traffic), Packet calls it first
	rejectPackets atomic.Bool    // Packet returns an error
	gate          chan struct{}  // when non-nil, Region waits for it to close
	piece         atomic.Int64   // when > 0, Region hands out at most this many bytes a call
}

func newRecorder() *recorder {
	return &recorder{
		packets: make(chan packetEvent, 4096),
		puts:    make(chan putEvent, 4096),
		idles:   make(chan idleEvent, 4096),
		lost:    make(chan lostEvent, 64),
		regions: make(map[uint64][]byte),
	}
}

// region registers n bytes of memory under handle and returns it.
func (h *recorder) region(handle uint64, n int) []byte {
	b := make([]byte, n)
	h.mu.Lock()
	h.regions[handle] = b
	h.mu.Unlock()
	return b
}

// holds reports whether region handle holds want at offset. It reads under
// the lock Region takes, which orders the read before the next Put's writes
// for the race detector (it cannot see the order the network imposes).
func (h *recorder) holds(handle uint64, offset int, want []byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.regions[handle]
	return offset+len(want) <= len(b) && bytes.Equal(b[offset:offset+len(want)], want)
}

func (h *recorder) Packet(peer int, body []byte) error {
	if h.onPacket != nil {
		h.onPacket(peer)
	}
	if h.rejectPackets.Load() {
		return errors.New("test handler rejects packets")
	}
	h.packets <- packetEvent{peer, append([]byte(nil), body...)}
	return nil
}

func (h *recorder) Region(peer int, region uint64, offset int64, n int) ([]byte, error) {
	h.mu.Lock()
	b, ok := h.regions[region]
	gate := h.gate
	h.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if !ok {
		return nil, fmt.Errorf("unknown region %d", region)
	}
	if offset < 0 || n < 0 || offset > int64(len(b)) || int64(n) > int64(len(b))-offset {
		return nil, fmt.Errorf("region %d: %d bytes at %d outside its %d bytes", region, n, offset, len(b))
	}
	if k := h.piece.Load(); k > 0 && int64(n) > k {
		n = int(k)
	}
	return b[offset : offset+int64(n)], nil
}

func (h *recorder) PutDone(peer int, region uint64, offset int64, n int) {
	h.puts <- putEvent{peer, region, offset, n}
}

func (h *recorder) Idle(r driver.Rail, err error) { h.idles <- idleEvent{r, err} }

func (h *recorder) PeerLost(peer int, err error) { h.lost <- lostEvent{peer, err} }

// recv waits for the next event on c.
func recv[T any](t testing.TB, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(wait):
		t.Fatalf("no %s within %v", what, wait)
		panic("unreachable")
	}
}

// none checks that c holds nothing now and stays empty for a short while.
func none[T any](t testing.TB, c <-chan T, what string) {
	t.Helper()
	select {
	case v := <-c:
		t.Fatalf("unexpected %s: %+v", what, v)
	case <-time.After(100 * time.Millisecond):
	}
}

// logBuffer collects slog output for assertions.
type logBuffer struct{ syncbuf.Buffer }

// waitLog waits until the log contains all of want.
func (l *logBuffer) waitLog(t testing.TB, want ...string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		s := l.String()
		ok := true
		for _, w := range want {
			ok = ok && bytes.Contains([]byte(s), []byte(w))
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log lacks %q; it holds:\n%s", want, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// discardLogger keeps expected warnings out of the test output.
func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// node is one rank of a test mesh.
type node struct {
	tr  *Transport
	rec *recorder
}

// mesh starts n ranks with rails loopback rails each, connects them, and
// closes them at the end of the test. edit, if set, adjusts each Config.
func mesh(t testing.TB, n, rails int, edit func(*Config)) []node {
	t.Helper()
	nodes := make([]node, n)
	addrs := make([][]string, n)
	for i := range nodes {
		rec := newRecorder()
		cfg := Config{
			Rank: i, Size: n, Secret: testSecret, Handler: rec,
			MaxPacket: 8 << 20, Logger: discardLogger(),
		}
		for range rails {
			cfg.ListenAddrs = append(cfg.ListenAddrs, "127.0.0.1:0")
		}
		if edit != nil {
			edit(&cfg)
		}
		tr, err := Listen(cfg)
		if err != nil {
			t.Fatalf("Listen rank %d: %v", i, err)
		}
		t.Cleanup(func() { tr.Close() })
		nodes[i] = node{tr, rec}
		addrs[i] = tr.Addrs()
	}
	errs := make(chan error, n)
	for _, nd := range nodes {
		go func() { errs <- nd.tr.Connect(context.Background(), addrs) }()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatalf("Connect: %v", err)
		}
	}
	return nodes
}

// send posts f on r and, when Post leaves the rest to the writer, waits for
// the sender's Idle for that rail.
func send(t testing.TB, from *recorder, r driver.Rail, f *driver.Frame) {
	t.Helper()
	done, err := r.Post(f)
	if err != nil {
		t.Fatalf("Post: %v", err)
	}
	if !done {
		ev := recv(t, from.idles, "Idle")
		if ev.rail != r || ev.err != nil {
			t.Fatalf("Idle(%v, %v), want Idle(%v, nil)", ev.rail, ev.err, r)
		}
	}
}

// pattern returns n bytes that differ with seed and position.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ byte(i>>11) ^ seed
	}
	return b
}

// split cuts b into three iovec pieces, one of them empty, to exercise
// gathering.
func split(b []byte) [][]byte {
	a := len(b) / 3
	return [][]byte{b[:a], nil, b[a : 2*a], b[2*a:]}
}

// rawPeer dials tr's rail as rank and completes the connector handshake,
// returning a connection the test can write anything on.
func rawPeer(t testing.TB, tr *Transport, rank, rail int, secret []byte) (net.Conn, error) {
	t.Helper()
	c, err := net.Dial("tcp", tr.Addrs()[rail])
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	cfg := handshakeConfig{
		secret: secret, rank: rank, size: tr.cfg.Size,
		maxPacket: DefaultMaxPacket, challenge: func() ([]byte, error) { return make([]byte, 32), nil },
	}
	c.SetDeadline(time.Now().Add(wait))
	_, err = connectHandshake(c, &cfg, tr.cfg.Rank, rail)
	c.SetDeadline(time.Time{})
	return c, err
}
