package tcp

import (
	"bytes"
	"context"
	"errors"
	"net"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/driver"
)

// sizes are the payload sizes every path is tried with: empty, tiny, odd,
// one reader buffer, and big enough that the writer goroutine takes over.
var sizes = []int{0, 1, 7, 64 << 10, 4<<20 + 13}

func TestCaps(t *testing.T) {
	nodes := mesh(t, 2, 2, func(c *Config) {
		if c.Rank == 1 {
			c.MaxPacket = 4096 // the smaller end wins
		}
	})
	for rank, nd := range nodes {
		if nd.tr.Name() != "tcp" {
			t.Errorf("Name() = %q", nd.tr.Name())
		}
		if got := nd.tr.Rails(rank); got != nil {
			t.Errorf("Rails(self) = %v, want nil", got)
		}
		for _, bad := range []int{-1, 2, 100} {
			if got := nd.tr.Rails(bad); got != nil {
				t.Errorf("Rails(%d) = %v, want nil", bad, got)
			}
		}
		rails := nd.tr.Rails(1 - rank)
		if len(rails) != 2 {
			t.Fatalf("rank %d: %d rails, want 2", rank, len(rails))
		}
		for i, r := range rails {
			// Both rails listen on 127.0.0.1: the loopback interface.
			want := driver.Caps{Transport: "tcp", Rail: i, Name: "lo/ipv4", MaxPacket: 4096, Iovec: true}
			if !reflect.DeepEqual(r.Caps(), want) {
				t.Errorf("rank %d rail %d: Caps() = %+v, want %+v", rank, i, r.Caps(), want)
			}
			if r.Peer() != 1-rank {
				t.Errorf("rank %d rail %d: Peer() = %d", rank, i, r.Peer())
			}
		}
	}
}

func TestSendReceive(t *testing.T) {
	nodes := mesh(t, 3, 2, nil)
	type route struct{ from, to, rail int }
	routes := []route{{0, 1, 0}, {1, 0, 1}, {2, 0, 0}, {0, 2, 1}, {2, 1, 1}}
	for _, kind := range []driver.FrameKind{driver.Packet, driver.Put} {
		for _, size := range sizes {
			for _, rt := range routes {
				from, to := nodes[rt.from], nodes[rt.to]
				payload := pattern(size, byte(size+rt.from))
				f := &driver.Frame{Kind: kind, Iov: split(payload)}
				if kind == driver.Put {
					f.Region, f.Offset = uint64(100+rt.from), 5
					to.rec.region(f.Region, size+10)
				}
				send(t, from.rec, from.tr.Rails(rt.to)[rt.rail], f)
				if kind == driver.Packet {
					ev := recv(t, to.rec.packets, "Packet")
					if ev.peer != rt.from || !bytes.Equal(ev.body, payload) {
						t.Fatalf("%v size %d %+v: got %d bytes from %d", kind, size, rt, len(ev.body), ev.peer)
					}
					continue
				}
				ev := recv(t, to.rec.puts, "PutDone")
				if ev != (putEvent{rt.from, f.Region, 5, size}) {
					t.Fatalf("size %d %+v: PutDone %+v", size, rt, ev)
				}
				if !to.rec.holds(f.Region, 5, payload) {
					t.Fatalf("size %d %+v: region does not hold the payload", size, rt)
				}
			}
		}
	}
}

// TestOrder sends mixed frames back to back, without waiting for delivery,
// and checks they arrive in order.
func TestOrder(t *testing.T) {
	nodes := mesh(t, 2, 1, nil)
	a, b := nodes[0], nodes[1]
	r := a.tr.Rails(1)[0]
	b.rec.region(1, 4<<20+13)
	for i, size := range append(sizes, sizes...) {
		payload := pattern(size, byte(i))
		kind := driver.Packet
		if i%3 == 2 {
			kind = driver.Put
		}
		send(t, a.rec, r, &driver.Frame{Kind: kind, Region: 1, Iov: [][]byte{payload}})
		if kind == driver.Put {
			if ev := recv(t, b.rec.puts, "PutDone"); ev.n != size || !b.rec.holds(1, 0, payload) {
				t.Fatalf("frame %d: Put of %d bytes, got %+v", i, size, ev)
			}
			continue
		}
		if ev := recv(t, b.rec.packets, "Packet"); !bytes.Equal(ev.body, payload) {
			t.Fatalf("frame %d: Packet of %d bytes, got %d bytes", i, size, len(ev.body))
		}
	}
	// Many small frames posted without waiting for the receiver.
	for i := range 1000 {
		send(t, a.rec, r, &driver.Frame{Kind: driver.Packet, Iov: [][]byte{{byte(i), byte(i >> 8)}}})
	}
	for i := range 1000 {
		ev := recv(t, b.rec.packets, "Packet")
		if len(ev.body) != 2 || int(ev.body[0])|int(ev.body[1])<<8 != i {
			t.Fatalf("packet %d: got %v", i, ev.body)
		}
	}
}

func TestChunkedPut(t *testing.T) {
	nodes := mesh(t, 2, 1, nil)
	a, b := nodes[0], nodes[1]
	a.tr.putChunk = 1000 // set before any Post
	b.rec.region(3, 5000)
	payload := pattern(4500, 9)
	done, err := a.tr.Rails(1)[0].Post(&driver.Frame{Kind: driver.Put, Region: 3, Offset: 300, Iov: split(payload)})
	if err != nil || done {
		t.Fatalf("Post = %v, %v; want false, nil (chunked Puts go to the writer)", done, err)
	}
	recv(t, a.rec.idles, "Idle")
	for off := 0; off < len(payload); off += 1000 {
		want := putEvent{0, 3, int64(300 + off), min(1000, len(payload)-off)}
		if ev := recv(t, b.rec.puts, "PutDone"); ev != want {
			t.Fatalf("PutDone %+v, want %+v", ev, want)
		}
	}
	if !b.rec.holds(3, 300, payload) {
		t.Fatal("region does not hold the payload")
	}
}

// TestOffload: a frame posted with Offload goes to the writer whole, small
// or large, gathered or not: Post returns false, Idle follows once, and
// every byte arrives. A Flush right after the Post, which may take the
// frame from the writer, changes none of that.
func TestOffload(t *testing.T) {
	nodes := mesh(t, 2, 1, nil)
	a, b := nodes[0], nodes[1]
	r := a.tr.Rails(1)[0]
	b.rec.region(7, 4<<20+100)
	tests := []struct {
		kind   driver.FrameKind
		size   int
		gather bool // the payload in several iovec parts
		flush  bool // Flush right after the Post
	}{
		{driver.Packet, 0, false, false},
		{driver.Packet, 7, false, false},
		{driver.Packet, 64 << 10, true, false},
		{driver.Packet, 4<<20 + 13, false, false},
		{driver.Packet, 4<<20 + 13, true, true},
		{driver.Put, 1, false, false},
		{driver.Put, 64 << 10, false, true},
		{driver.Put, 4<<20 + 13, false, false},
		{driver.Put, 4<<20 + 13, true, false},
		{driver.Put, 4<<20 + 13, false, true},
	}
	kinds := map[driver.FrameKind]string{driver.Packet: "Packet", driver.Put: "Put"}
	for i, tc := range tests {
		payload := pattern(tc.size, byte(i))
		f := &driver.Frame{Kind: tc.kind, Iov: [][]byte{payload}, Offload: true}
		if tc.gather {
			f.Iov = split(payload)
		}
		if tc.kind == driver.Put {
			f.Region, f.Offset = 7, 50
		}
		done, err := r.Post(f)
		if done || err != nil {
			t.Fatalf("%d: Post = %v, %v; want false, nil (offloaded)", i, done, err)
		}
		flushed := tc.flush && r.(driver.Flusher).Flush()
		if ev := recv(t, a.rec.idles, "Idle"); ev.rail != r || ev.err != nil {
			t.Fatalf("%d: Idle(%v, %v), want Idle(%v, nil)", i, ev.rail, ev.err, r)
		}
		if tc.kind == driver.Packet {
			if ev := recv(t, b.rec.packets, "Packet"); !bytes.Equal(ev.body, payload) {
				t.Fatalf("%d: Packet of %d bytes arrived with %d bytes or different ones", i, tc.size, len(ev.body))
			}
		} else {
			if ev := recv(t, b.rec.puts, "PutDone"); ev != (putEvent{0, 7, 50, tc.size}) {
				t.Fatalf("%d: PutDone %+v", i, ev)
			}
			if !b.rec.holds(7, 50, payload) {
				t.Fatalf("%d: region does not hold the %d-byte payload", i, tc.size)
			}
		}
		t.Logf("%s of %d bytes, flush %v: taken by Flush %v", kinds[tc.kind], tc.size, tc.flush, flushed)
	}
	none(t, a.rec.idles, "second Idle")
	if runtime.GOOS == "linux" {
		// Without the flag, a small frame leaves inline again.
		if done, err := r.Post(&driver.Frame{Kind: driver.Packet, Iov: [][]byte{[]byte("x")}}); !done || err != nil {
			t.Fatalf("Post = %v, %v; want true, nil", done, err)
		}
		recv(t, b.rec.packets, "Packet")
	}
}

func TestPostErrors(t *testing.T) {
	nodes := mesh(t, 2, 1, func(c *Config) { c.MaxPacket = 4096 })
	a, b := nodes[0], nodes[1]
	r := a.tr.Rails(1)[0]
	tests := []struct {
		name string
		f    driver.Frame
	}{
		{"oversize packet", driver.Frame{Kind: driver.Packet, Iov: [][]byte{make([]byte, 4097)}}},
		{"negative offset", driver.Frame{Kind: driver.Put, Offset: -1}},
		{"unknown kind", driver.Frame{Kind: 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if done, err := r.Post(&tt.f); err == nil || done {
				t.Fatalf("Post = %v, %v; want an error", done, err)
			}
		})
	}
	// The rail still works after refused frames.
	send(t, a.rec, r, &driver.Frame{Kind: driver.Packet, Iov: [][]byte{[]byte("ok")}})
	recv(t, b.rec.packets, "Packet")

	t.Run("busy", func(t *testing.T) {
		// The receiver holds the Put in Region, so 64 MiB cannot fit in the
		// socket buffers and the first Post stays with the writer.
		gate := make(chan struct{})
		b.rec.mu.Lock()
		b.rec.gate = gate
		b.rec.mu.Unlock()
		b.rec.region(4, 64<<20)
		big := &driver.Frame{Kind: driver.Put, Region: 4, Iov: [][]byte{make([]byte, 64<<20)}}
		if done, err := r.Post(big); done || err != nil {
			t.Fatalf("Post = %v, %v; want false, nil", done, err)
		}
		_, err := r.Post(&driver.Frame{Kind: driver.Packet})
		if !errors.Is(err, errBusy) {
			t.Errorf("second Post: %v, want errBusy", err)
		}
		b.rec.mu.Lock()
		b.rec.gate = nil
		b.rec.mu.Unlock()
		close(gate)
		if ev := recv(t, a.rec.idles, "Idle"); ev.err != nil {
			t.Fatalf("Idle: %v", ev.err)
		}
		recv(t, b.rec.puts, "PutDone")
	})
}

func TestConnectErrors(t *testing.T) {
	t.Run("missing rank", func(t *testing.T) {
		tr, err := Listen(Config{Rank: 0, Size: 3, Secret: testSecret, Handler: newRecorder(), ConnectTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		err = tr.Connect(context.Background(), [][]string{tr.Addrs(), nil, nil})
		if err == nil || !strings.Contains(err.Error(), "rank(s) 1, 2") || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Connect: %v; want a deadline error naming ranks 1, 2", err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		tr, err := Listen(Config{Rank: 1, Size: 2, Secret: testSecret, Handler: newRecorder(), ConnectTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		// A port nobody listens on (taken after Listen, so tr cannot reuse it).
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		dead := ln.Addr().String()
		ln.Close()
		err = tr.Connect(context.Background(), [][]string{{dead}, tr.Addrs()})
		if err == nil || !strings.Contains(err.Error(), "rank(s) 0") || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("Connect: %v; want an error naming rank 0 and the refused dial", err)
		}
	})
	t.Run("bad addresses", func(t *testing.T) {
		tr, err := Listen(Config{Rank: 1, Size: 2, Secret: testSecret, Handler: newRecorder()})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		for _, addrs := range [][][]string{nil, {{"a"}}, {{}, {"b"}}, {{"a", "b"}, {"c"}}} {
			if err := tr.Connect(context.Background(), addrs); err == nil {
				t.Errorf("Connect(%q) succeeded", addrs)
			}
		}
	})
	t.Run("closed", func(t *testing.T) {
		tr, err := Listen(Config{Rank: 0, Size: 2, Secret: testSecret, Handler: newRecorder()})
		if err != nil {
			t.Fatal(err)
		}
		go func() { time.Sleep(50 * time.Millisecond); tr.Close() }()
		if err := tr.Connect(context.Background(), [][]string{tr.Addrs(), {"127.0.0.1:1"}}); !errors.Is(err, errClosing) {
			t.Fatalf("Connect: %v, want errClosing", err)
		}
	})
}

func TestConfig(t *testing.T) {
	h := newRecorder()
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"ok", Config{Size: 1, Secret: testSecret, Handler: h}, true},
		{"no size", Config{Secret: testSecret, Handler: h}, false},
		{"rank too big", Config{Rank: 1, Size: 1, Secret: testSecret, Handler: h}, false},
		{"negative rank", Config{Rank: -1, Size: 1, Secret: testSecret, Handler: h}, false},
		{"short secret", Config{Size: 1, Secret: testSecret[:15], Handler: h}, false},
		{"no handler", Config{Size: 1, Secret: testSecret}, false},
		{"tiny MaxPacket", Config{Size: 1, Secret: testSecret, Handler: h, MaxPacket: 10}, false},
		{"huge MaxPacket", Config{Size: 1, Secret: testSecret, Handler: h, MaxPacket: MaxMaxPacket + 1}, false},
		{"negative timeout", Config{Size: 1, Secret: testSecret, Handler: h, CloseTimeout: -1}, false},
		{"bad address", Config{Size: 1, Secret: testSecret, Handler: h, ListenAddrs: []string{"nonsense"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := Listen(tt.cfg)
			if (err == nil) != tt.ok {
				t.Fatalf("Listen: %v, want ok=%v", err, tt.ok)
			}
			if err != nil {
				return
			}
			defer tr.Close()
			if err := tr.Connect(context.Background(), [][]string{tr.Addrs()}); err != nil {
				t.Fatalf("Connect of a one-rank job: %v", err)
			}
			if len(tr.Addrs()) != 1 || !strings.HasPrefix(tr.Addrs()[0], "127.0.0.1:") {
				t.Errorf("Addrs() = %q, want one loopback address", tr.Addrs())
			}
		})
	}
}

// TestCloseLeavesNoGoroutines meshes, sends, closes, and checks that every
// goroutine the transports started is gone.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		nodes := mesh(t, 3, 2, nil) // closed below; the cleanup's Close is a no-op
		for _, nd := range nodes {
			for peer := range nodes {
				for _, r := range nd.tr.Rails(peer) {
					send(t, nd.rec, r, &driver.Frame{Kind: driver.Packet, Iov: [][]byte{make([]byte, 100<<10)}})
				}
			}
		}
		for _, nd := range nodes {
			for range 4 {
				recv(t, nd.rec.packets, "Packet")
			}
		}
		errs := make(chan error, len(nodes))
		for _, nd := range nodes {
			go func() { errs <- nd.tr.Close() }()
		}
		for range nodes {
			if err := <-errs; err != nil {
				t.Errorf("Close: %v", err)
			}
		}
		for _, nd := range nodes {
			if err := nd.tr.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		}
	}()
	deadline := time.Now().Add(wait)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSkippedPeers: Skip leaves a rank out of the mesh (another transport
// reaches it): Connect completes without it.
func TestSkippedPeers(t *testing.T) {
	var trs []*Transport
	for rank := 0; rank < 3; rank++ {
		tr, err := Listen(Config{Rank: rank, Size: 3, Secret: testSecret, Handler: newRecorder(), Logger: discardLogger(), ConnectTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		trs = append(trs, tr)
	}
	addrs := [][]string{trs[0].Addrs(), trs[1].Addrs(), trs[2].Addrs()}
	// Ranks 0 and 1 share a node: they skip each other over tcp.
	trs[0].Skip(1)
	trs[1].Skip(0)
	errc := make(chan error, 3)
	for _, tr := range trs {
		go func() { errc <- tr.Connect(context.Background(), addrs) }()
	}
	for range trs {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if trs[0].Rails(1) != nil || trs[1].Rails(0) != nil || trs[0].Rails(2) == nil || trs[2].Rails(1) == nil {
		t.Fatal("rails do not follow the skip lists")
	}
}
