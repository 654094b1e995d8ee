package boot

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/auth"
	"github.com/commtune/commtune/internal/syncbuf"
)

// testTimeout bounds waits that only a bug could make long; it asserts no
// timing (the machine is shared and noisy).
const testTimeout = 30 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func newSecret(t *testing.T) []byte {
	s, err := auth.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// syncBuffer is a log sink that tests read while the server writes.
type syncBuffer = syncbuf.Buffer

type testServer struct {
	*Server
	secret []byte
	log    *syncBuffer
}

func startServer(t *testing.T, size int, lim limits) *testServer {
	t.Helper()
	secret := newSecret(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	s := newServer(ln, size, secret, slog.New(slog.NewTextHandler(logs, nil)), lim)
	t.Cleanup(func() { s.Close() })
	return &testServer{s, secret, logs}
}

func (s *testServer) dial(t *testing.T, rank int) *client {
	t.Helper()
	c, err := dialKV(testCtx(t), s.Addr(), s.secret, rank, s.st.size)
	if err != nil {
		t.Fatalf("dial as rank %d: %v", rank, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitFor polls cond under the server's lock until it holds; only a bug
// makes it wait long.
func (s *testServer) waitFor(t *testing.T, what string, cond func(*store) bool) {
	t.Helper()
	for deadline := time.Now().Add(testTimeout); ; {
		s.mu.Lock()
		ok := cond(s.st)
		s.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server never reached: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// events returns what the server reported, after shutting it down.
func (s *testServer) events(t *testing.T) []Event {
	t.Helper()
	if err := s.Shutdown(testCtx(t)); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	var evs []Event
	for ev := range s.Events() {
		evs = append(evs, ev)
	}
	return evs
}

func TestRanksExchangeAddresses(t *testing.T) {
	for _, size := range []int{1, 2, 8} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			s := startServer(t, size, defaultLimits)
			ctx := testCtx(t)
			var wg sync.WaitGroup
			errs := make(chan error, size)
			for r := range size {
				wg.Go(func() {
					kv, err := dialKV(ctx, s.Addr(), s.secret, r, size)
					if err != nil {
						errs <- err
						return
					}
					errs <- exchange(ctx, kv, r, size)
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			if evs := s.events(t); len(evs) != 0 {
				t.Errorf("events = %v, want none (every rank said BYE)", evs)
			}
		})
	}
}

// exchange is what a rank does at start-up: publish its address, fence,
// read everyone's, fence again (reusing the store), then say goodbye.
func exchange(ctx context.Context, kv KV, rank, size int) error {
	if err := kv.Put(ctx, fmt.Sprintf("addr/%d", rank), fmt.Sprintf("host-%d:%d", rank, 4000+rank)); err != nil {
		return err
	}
	if err := kv.Fence(ctx); err != nil {
		return err
	}
	for p := range size {
		v, err := kv.Get(ctx, fmt.Sprintf("addr/%d", p))
		if err != nil {
			return err
		}
		if want := fmt.Sprintf("host-%d:%d", p, 4000+p); v != want {
			return fmt.Errorf("rank %d read addr/%d = %q, want %q", rank, p, v, want)
		}
	}
	if err := kv.Fence(ctx); err != nil {
		return err
	}
	return kv.Close()
}

func TestGetWaitsForPut(t *testing.T) {
	s := startServer(t, 2, defaultLimits)
	a, b := s.dial(t, 0), s.dial(t, 1)
	ctx := testCtx(t)
	got := make(chan string, 1)
	go func() {
		v, err := b.Get(ctx, "late")
		if err != nil {
			v = err.Error()
		}
		got <- v
	}()
	s.waitFor(t, "GET waiting", func(st *store) bool { return st.nwaiting[1] == 1 })
	if err := a.Put(ctx, "late", "here"); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != "here" {
		t.Fatalf("Get = %q, want %q", v, "here")
	}
}

func TestClientErrors(t *testing.T) {
	s := startServer(t, 1, limits{store: 3 * (entryCost + 8), waiting: 4})
	c := s.dial(t, 0)
	ctx := testCtx(t)
	if err := c.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"empty key", func() error { return c.Put(ctx, "", "v") }, ErrRefused},
		{"long key", func() error { return c.Put(ctx, strings.Repeat("k", MaxKey+1), "v") }, ErrLimit},
		{"long value", func() error { return c.Put(ctx, "k2", strings.Repeat("v", MaxValue+1)) }, ErrLimit},
		{"get long key", func() error { _, err := c.Get(ctx, strings.Repeat("k", MaxKey+1)); return err }, ErrLimit},
		{"conflict", func() error { return c.Put(ctx, "k", "other") }, ErrConflict},
		{"store full", func() error {
			for i := range 4 {
				if err := c.Put(ctx, fmt.Sprint("key", i), "value"); err != nil {
					return err
				}
			}
			return nil
		}, ErrLimit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.op(); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// None of those errors broke the connection.
	if v, err := c.Get(ctx, "k"); err != nil || v != "v" {
		t.Fatalf("Get after errors = %q, %v", v, err)
	}
}

func TestAuthentication(t *testing.T) {
	tests := []struct {
		name      string
		clientKey func(s *testServer) []byte
		rank      int
		want      error
		logged    string
	}{
		{"wrong secret", func(*testServer) []byte { return newSecret(t) }, 0, auth.ErrDenied, "rejected connection"},
		{"right secret", func(s *testServer) []byte { return s.secret }, 0, nil, ""},
		{"rank out of range", func(s *testServer) []byte { return s.secret }, 7, ErrRefused, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, 2, defaultLimits)
			c, err := dialKV(testCtx(t), s.Addr(), tc.clientKey(s), tc.rank, 2)
			if c != nil {
				c.Close()
			}
			if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Fatalf("dial err = %v, want %v", err, tc.want)
			}
			if tc.logged != "" {
				s.Close() // wait for the rejection to be logged
				if !strings.Contains(s.log.String(), tc.logged) {
					t.Fatalf("log %q does not say %q", s.log.String(), tc.logged)
				}
			}
		})
	}
}

// TestClientRejectsImpostor: a server without the job secret is refused by
// the client before the client proves anything.
func TestClientRejectsImpostor(t *testing.T) {
	s := startServer(t, 1, defaultLimits)
	_, err := dialKV(testCtx(t), s.Addr(), newSecret(t), 0, 1)
	if !errors.Is(err, auth.ErrDenied) || !strings.Contains(err.Error(), "kvs server") {
		t.Fatalf("err = %v, want the server denied by the client", err)
	}
}

func TestDuplicateRankRefused(t *testing.T) {
	s := startServer(t, 2, defaultLimits)
	s.dial(t, 1)
	_, err := dialKV(testCtx(t), s.Addr(), s.secret, 1, 2)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "already connected") {
		t.Fatalf("second rank 1: err = %v, want ErrRefused (already connected)", err)
	}
}

// rawConn is an authenticated connection that sends whatever bytes a test
// wants.
func rawConn(t *testing.T, s *testServer, rank uint32) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(testTimeout))
	if err := clientHandshake(nc, s.secret, rank); err != nil {
		t.Fatal(err)
	}
	return nc
}

// readAll returns the messages the server sends until it closes.
func readAll(t *testing.T, r io.Reader) []string {
	var got []string
	for {
		f, err := readFrame(r, nil)
		if err != nil {
			return got
		}
		m, err := decodeMessage(f)
		if err != nil {
			t.Fatalf("server sent a bad frame: %v", err)
		}
		got = append(got, renderMsg(m))
	}
}

func TestMalformedFrames(t *testing.T) {
	frame := func(b []byte) []byte { return append(binary.LittleEndian.AppendUint32(nil, uint32(len(b))), b...) }
	helloFrame := appendFrame(nil, &message{op: opHello, id: 1, rank: 0, size: 1})
	tests := []struct {
		name  string
		send  []byte
		want  string // what the server answers before hanging up
		event bool   // the rank had joined: its loss is reported
	}{
		{"length too large", binary.LittleEndian.AppendUint32(nil, maxFrame+1), "ERR#0 malformed", false},
		{"length too small", binary.LittleEndian.AppendUint32(nil, 2), "ERR#0 malformed", false},
		{"unknown op", frame(body(0x55, 9)), "ERR#9 malformed", false},
		{"truncated put", frame(body(opPut, 3, 4, 0, 'a')), "ERR#3 malformed", false},
		{"reply as request", frame(body(opFenced, 4, 1, 0, 0, 0, 0, 0, 0, 0)), "ERR#4 malformed", false},
		{"after hello", append(helloFrame, frame(body(opBye, 2, 0))...), "OK#1 ERR#2 malformed", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, 1, defaultLimits)
			nc := rawConn(t, s, 0)
			if _, err := nc.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(readAll(t, nc), " "); got != tc.want {
				t.Fatalf("server answered %q, want %q", got, tc.want)
			}
			evs := s.events(t)
			if tc.event != (len(evs) == 1 && evs[0].Kind == EventLost) {
				t.Fatalf("events = %v, want lost event: %v", evs, tc.event)
			}
			if !strings.Contains(s.log.String(), "dropping connection") {
				t.Fatalf("log %q does not report the dropped connection", s.log.String())
			}
		})
	}
}

func TestRequestBeforeHello(t *testing.T) {
	s := startServer(t, 1, defaultLimits)
	nc := rawConn(t, s, 0)
	nc.Write(appendFrame(nil, &message{op: opGet, id: 5, key: "k"}))
	nc.Write(appendFrame(nil, &message{op: opHello, id: 6, rank: 0, size: 1}))
	nc.Write(appendFrame(nil, &message{op: opBye, id: 7}))
	if got := strings.Join(readAll(t, nc), " "); got != "ERR#5 refused OK#6 OK#7" {
		t.Fatalf("server answered %q", got)
	}
}

func TestServerCloseFailsWaitingGet(t *testing.T) {
	s := startServer(t, 1, defaultLimits)
	c := s.dial(t, 0)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), "never") // only the server's end can stop it
		errc <- err
	}()
	s.waitFor(t, "GET waiting", func(st *store) bool { return st.nwaiting[0] == 1 })
	s.Close()
	if err := <-errc; !errors.Is(err, ErrServerLost) {
		t.Fatalf("Get err = %v, want ErrServerLost", err)
	}
	// Later operations fail at once too.
	if err := c.Put(context.Background(), "k", "v"); !errors.Is(err, ErrServerLost) {
		t.Fatalf("Put after loss: err = %v, want ErrServerLost", err)
	}
	if err := c.Fence(context.Background()); !errors.Is(err, ErrServerLost) {
		t.Fatalf("Fence after loss: err = %v, want ErrServerLost", err)
	}
}

func TestDialDeadServer(t *testing.T) {
	s := startServer(t, 1, defaultLimits)
	addr := s.Addr()
	s.Close()
	if _, err := dialKV(testCtx(t), addr, s.secret, 0, 1); err == nil {
		t.Fatal("dial to a closed server succeeded")
	}
	// A listener that accepts and never answers: the context bounds it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		nc, err := ln.Accept()
		if err == nil {
			cancel() // the client is now waiting for a server hello
			defer nc.Close()
			io.Copy(io.Discard, nc)
		}
	}()
	if _, err := dialKV(ctx, ln.Addr().String(), s.secret, 0, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("dial to a silent server: err = %v, want context.Canceled", err)
	}
}

func TestGetCanceled(t *testing.T) {
	s := startServer(t, 1, defaultLimits)
	c := s.dial(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, "never")
		errc <- err
	}()
	s.waitFor(t, "GET waiting", func(st *store) bool { return st.nwaiting[0] == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Get err = %v, want context.Canceled", err)
	}
	s.waitFor(t, "GET cancelled on the server", func(st *store) bool { return st.nwaiting[0] == 0 })
	if err := c.Put(testCtx(t), "k", "v"); err != nil {
		t.Fatalf("Put after a cancelled Get: %v", err)
	}
}

func TestEvents(t *testing.T) {
	s := startServer(t, 3, defaultLimits)
	ctx := testCtx(t)
	bye := s.dial(t, 0)
	aborter := s.dial(t, 1)
	vanisher := s.dial(t, 2)

	fenced := make(chan error, 1)
	go func() { fenced <- bye.Fence(ctx) }()
	s.waitFor(t, "rank 0 in the fence", func(st *store) bool { return st.inFence[0] })
	if err := aborter.Abort(ctx, 3, "giving up"); err != nil {
		t.Fatal(err)
	}
	vanisher.nc.Close() // no BYE
	if err := <-fenced; !errors.Is(err, ErrRankGone) {
		t.Fatalf("fence with a lost rank: err = %v, want ErrRankGone", err)
	}
	bye.Close()
	aborter.Close()
	want := []Event{{Kind: EventAbort, Rank: 1, Code: 3, Message: "giving up"}, {Kind: EventLost, Rank: 2}}
	if got := s.events(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

func TestCloseIsIdempotentAndFinal(t *testing.T) {
	s := startServer(t, 1, defaultLimits)
	c := s.dial(t, 0)
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := c.Put(testCtx(t), "k", "v"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: err = %v, want ErrClosed", err)
	}
}

// TestGetMany fetches many keys in batches, waiting for late ones, and
// GetAll does the same through a KV that has only Get.
func TestGetMany(t *testing.T) {
	s := startServer(t, 2, defaultLimits)
	a, b := s.dial(t, 0), s.dial(t, 1)
	ctx := testCtx(t)
	keys := make([]string, 2*getBatch+7) // three batches
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
		if i != len(keys)-1 { // the last one comes late
			if err := a.Put(ctx, keys[i], fmt.Sprint("v", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	type getter func(ctx context.Context, keys []string) ([]string, error)
	for _, tc := range []struct {
		name string
		get  getter
	}{
		{"GetMany", b.GetMany},
		{"GetAll without GetMany", func(ctx context.Context, keys []string) ([]string, error) {
			return GetAll(ctx, struct{ KV }{b}, keys)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan []string, 1)
			go func() {
				vals, err := tc.get(ctx, keys)
				if err != nil {
					t.Error(err)
				}
				got <- vals
			}()
			if tc.name == "GetMany" {
				s.waitFor(t, "the last GET waiting", func(st *store) bool { return st.nwaiting[1] == 1 })
				if err := a.Put(ctx, keys[len(keys)-1], fmt.Sprint("v", len(keys)-1)); err != nil {
					t.Fatal(err)
				}
			}
			vals := <-got
			if len(vals) != len(keys) {
				t.Fatalf("%d values for %d keys", len(vals), len(keys))
			}
			for i, v := range vals {
				if v != fmt.Sprint("v", i) {
					t.Fatalf("value %d = %q", i, v)
				}
			}
		})
	}
	t.Run("bad key", func(t *testing.T) {
		if _, err := b.GetMany(ctx, []string{"k0", strings.Repeat("k", MaxKey+1)}); !errors.Is(err, ErrLimit) {
			t.Fatalf("err = %v, want ErrLimit", err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := b.GetMany(cctx, []string{"k0", "never1", "never2"})
			errc <- err
		}()
		s.waitFor(t, "two GETs waiting", func(st *store) bool { return st.nwaiting[1] == 2 })
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		s.waitFor(t, "the GETs cancelled on the server", func(st *store) bool { return st.nwaiting[1] == 0 })
	})
}

// TestWatchLosses: ranks that watch hear of every rank the launcher
// reports lost — those reported before they asked, then the others — and
// a rank not watching hears nothing and keeps working.
func TestWatchLosses(t *testing.T) {
	s := startServer(t, 4, defaultLimits)
	ctx := testCtx(t)
	c := make([]*client, 4)
	for r := range c {
		c[r] = s.dial(t, r)
	}
	s.ReportLost(3)
	heard := make([]chan int, 2)
	for r := range heard {
		heard[r] = make(chan int, 4)
		if err := c[r].WatchLosses(ctx, func(l int) { heard[r] <- l }); err != nil {
			t.Fatalf("rank %d: WatchLosses: %v", r, err)
		}
	}
	if err := c[0].WatchLosses(ctx, func(int) {}); !errors.Is(err, ErrRefused) {
		t.Fatalf("second WatchLosses = %v, want ErrRefused", err)
	}
	s.ReportLost(2)
	s.ReportLost(2)
	for r := range heard {
		for _, want := range []int{3, 2} {
			select {
			case got := <-heard[r]:
				if got != want {
					t.Fatalf("rank %d heard rank %d lost, want %d", r, got, want)
				}
			case <-ctx.Done():
				t.Fatalf("rank %d never heard of rank %d", r, want)
			}
		}
	}
	// Rank 1 goes on using its connection; rank 2 never asked and heard
	// nothing that broke it.
	if err := c[1].Put(ctx, "after", "loss"); err != nil {
		t.Fatal(err)
	}
	if v, err := c[2].Get(ctx, "after"); err != nil || v != "loss" {
		t.Fatalf("Get after the reports = %q, %v", v, err)
	}
	for r := range heard {
		select {
		case l := <-heard[r]:
			t.Fatalf("rank %d heard of rank %d twice", r, l)
		default:
		}
	}
	if s.Left(3) || s.Left(0) {
		t.Fatal("Left before any BYE")
	}
	if err := c[3].Close(); err != nil {
		t.Fatal(err)
	}
	if !s.Left(3) {
		t.Fatal("Left(3) false after its BYE was answered")
	}
}
