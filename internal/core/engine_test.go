package core

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/fuzzseed"
)

func payload(n int, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*31 + i*7)
	}
	return b
}

func mustDone(t *testing.T, r *Request) Status {
	t.Helper()
	st, done, err := r.Test()
	if !done {
		t.Fatalf("request not complete")
	}
	if err != nil {
		t.Fatalf("request failed: %v", err)
	}
	return st
}

// TestProtocols checks each protocol end to end and that sends pick the
// protocol the thresholds say.
func TestProtocols(t *testing.T) {
	cfg := Config{RendezvousThreshold: 4096, IovecThreshold: 256}
	tests := []struct {
		size                int
		copy, iovec, rndv   uint64
		receiverCopiesBytes bool
	}{
		{0, 1, 0, 0, true},
		{100, 1, 0, 0, true},
		{256, 0, 1, 0, true},
		{4096, 0, 1, 0, true},
		{4097, 0, 0, 1, false},
		{1 << 20, 0, 0, 1, false},
	}
	for _, tc := range tests {
		for _, postFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%dB/postFirst=%v", tc.size, postFirst), func(t *testing.T) {
				n := newNet(t, 2, 1, cfg)
				msg := payload(tc.size, 1)
				buf := make([]byte, tc.size)
				var rr *Request
				if postFirst {
					rr = n.engines[1].Irecv(9, 0, 3, buf)
				}
				sr := n.engines[0].Isend(9, 1, 3, msg)
				n.run(nil)
				if !postFirst {
					rr = n.engines[1].Irecv(9, 0, 3, buf)
					n.run(nil)
				}
				mustDone(t, sr)
				st := mustDone(t, rr)
				if st.Count != tc.size || st.Source != 0 || st.Tag != 3 || !bytes.Equal(buf, msg) {
					t.Fatalf("status %+v, payload equal %v", st, bytes.Equal(buf, msg))
				}
				s := n.engines[0].Stats()
				if s.EagerCopySends != tc.copy || s.EagerIovecSends != tc.iovec || s.RendezvousSends != tc.rndv {
					t.Fatalf("sender stats %+v", s)
				}
				if got := n.engines[1].Stats().CopiedBytes; (got > 0) != (tc.receiverCopiesBytes && tc.size > 0) {
					t.Fatalf("receiver copied %d bytes", got)
				}
			})
		}
	}
}

// TestRendezvousLandsInUserBuffer proves the rendezvous data path has no
// intermediate copy: the region handed to the driver is the user's buffer
// itself, and the engine copies nothing.
func TestRendezvousLandsInUserBuffer(t *testing.T) {
	n := newNet(t, 2, 1, Config{RendezvousThreshold: 1024})
	buf := make([]byte, 1<<20)
	rr := n.engines[1].Irecv(0, 0, 0, buf)
	sr := n.engines[0].Isend(0, 1, 0, payload(len(buf), 2))
	// Deliver RTS and CTS; the next frame in flight is the data.
	for i := 0; i < 2; i++ {
		n.step(func(int) int { return 0 })
	}
	n.mu.Lock()
	f := n.flight[0].frame
	n.mu.Unlock()
	if f.Kind != driver.Put {
		t.Fatalf("third frame is kind %d, want a put", f.Kind)
	}
	region, err := n.engines[1].Region(0, f.Region, 0, f.Len())
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.SliceData(region) != unsafe.SliceData(buf) || len(region) != len(buf) {
		t.Fatalf("region %p+%d is not the user buffer %p+%d", unsafe.SliceData(region), len(region), unsafe.SliceData(buf), len(buf))
	}
	n.run(nil)
	mustDone(t, sr)
	mustDone(t, rr)
	if c := n.engines[1].Stats().CopiedBytes; c != 0 {
		t.Fatalf("engine copied %d bytes of a rendezvous message", c)
	}
	if !bytes.Equal(buf, payload(len(buf), 2)) {
		t.Fatal("payload differs")
	}
}

// TestRendezvousAllocations measures what a steady-state 1 MiB rendezvous
// allocates: bookkeeping only, never a buffer the size of the message.
func TestRendezvousAllocations(t *testing.T) {
	n := newNet(t, 2, 1, Config{RendezvousThreshold: 1024})
	msg := payload(1<<20, 3)
	buf := make([]byte, 1<<20)
	once := func() {
		rr := n.engines[1].Irecv(0, 0, 0, buf)
		n.engines[0].Isend(0, 1, 0, msg)
		n.run(nil)
		mustDone(t, rr)
	}
	once()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const iters = 20
	for i := 0; i < iters; i++ {
		once()
	}
	runtime.ReadMemStats(&after)
	perOp := (after.TotalAlloc - before.TotalAlloc) / iters
	if perOp > 16<<10 {
		t.Fatalf("a 1 MiB rendezvous allocates %d bytes per message", perOp)
	}
	t.Logf("1 MiB rendezvous: %d bytes allocated per message", perOp)
}

// TestOrderingUnderReordering sends a random mix of eager and rendezvous
// messages over two rails delivered in random order, with wildcard
// receives; each sender's messages must match in send order.
func TestOrderingUnderReordering(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			n := newNet(t, 3, 2, Config{RendezvousThreshold: 2048, IovecThreshold: 64, UnexpectedLimit: 64 << 10})
			const per = 60
			var recvs []*Request
			var bufs [][]byte
			post := func() {
				b := make([]byte, 8192)
				bufs = append(bufs, b)
				recvs = append(recvs, n.engines[2].Irecv(1, AnySource, AnyTag, b))
			}
			for i := 0; i < per; i++ {
				for src := 0; src < 2; src++ {
					size := []int{0, 10, 100, 3000, 8000}[rng.IntN(5)]
					m := payload(size, src*1000+i)
					if size >= 2 {
						m[0], m[1] = byte(src), byte(i)
					}
					n.engines[src].Isend(1, 2, i%4, m)
				}
				if rng.IntN(2) == 0 {
					post()
					post()
				}
				for k := rng.IntN(4); k > 0 && n.step(func(k int) int { return rng.IntN(k) }); k-- {
				}
			}
			for len(recvs) < 2*per {
				post()
			}
			n.run(rng)
			next := [2]int{}
			for i, r := range recvs {
				st := mustDone(t, r)
				if st.Count < 2 {
					next[st.Source]++
					continue
				}
				if int(bufs[i][0]) != st.Source || int(bufs[i][1]) != next[st.Source] {
					t.Fatalf("receive %d got message %d from %d, want %d", i, bufs[i][1], st.Source, next[st.Source])
				}
				next[st.Source]++
			}
		})
	}
}

// TestFlowControl floods a receiver that posts nothing: buffered memory
// stays within the sender's share of the limit (at most maxGrant), sends
// beyond the credit fall back to rendezvous, and once receives are posted
// every message arrives, in order.
func TestFlowControl(t *testing.T) {
	tests := []struct {
		name        string
		limit       int64
		count, size int
		share       int64
	}{
		{"share of the limit", 64 << 10, 500, 1000, 32 << 10}, // each of 2 ranks gets half
		{"capped share", 64 << 20, 200, 8000, maxGrant},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := newNet(t, 2, 1, Config{UnexpectedLimit: tc.limit, RendezvousThreshold: 8192, IovecThreshold: -1})
			var sends []*Request
			for i := 0; i < tc.count; i++ {
				m := payload(tc.size, i)
				m[0], m[1] = byte(i), byte(i>>8)
				sends = append(sends, n.engines[0].Isend(0, 1, 0, m))
				n.run(nil)
			}
			if s := n.engines[1].Stats(); s.UnexpectedPeak > tc.share {
				t.Fatalf("unexpected peak %d exceeds the sender's share %d", s.UnexpectedPeak, tc.share)
			}
			if n.engines[0].Stats().CreditFallbacks == 0 {
				t.Fatal("no send fell back to rendezvous")
			}
			for i := 0; i < tc.count; i++ {
				b := make([]byte, tc.size)
				r := n.engines[1].Irecv(0, 0, 0, b)
				n.run(nil)
				mustDone(t, r)
				if got := int(b[0]) | int(b[1])<<8; got != i {
					t.Fatalf("receive %d got message %d", i, got)
				}
			}
			for _, s := range sends {
				mustDone(t, s)
			}
			t.Logf("peak unexpected %d bytes, %d fallbacks", n.engines[1].Stats().UnexpectedPeak, n.engines[0].Stats().CreditFallbacks)
		})
	}
}

func TestPeerLost(t *testing.T) {
	tests := []struct {
		name           string
		cause          error
		anySourceFails bool
	}{
		{"crash", errors.New("connection reset"), true},
		{"orderly", fmt.Errorf("tcp: %w", driver.ErrPeerClosed), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := newNet(t, 3, 1, Config{RendezvousThreshold: 100})
			e := n.engines[0]
			fromLost := e.Irecv(0, 1, AnyTag, nil)
			anySrc := e.Irecv(0, AnySource, 5, nil)
			rndv := e.Isend(0, 1, 0, make([]byte, 1000)) // waits for a CTS
			e.PeerLost(1, tc.cause)
			for _, r := range []*Request{fromLost, rndv} {
				_, done, err := r.Test()
				var pl *PeerLostError
				if !done || !errors.Is(err, ErrPeerLost) || !errors.As(err, &pl) || pl.Rank != 1 {
					t.Fatalf("pending op: done %v err %v", done, err)
				}
			}
			if _, done, _ := anySrc.Test(); done != tc.anySourceFails {
				t.Fatalf("any-source receive done=%v after %s", done, tc.name)
			}
			if _, done, err := e.Isend(0, 1, 0, nil).Test(); !done || !errors.Is(err, ErrPeerLost) {
				t.Fatalf("later send: %v %v", done, err)
			}
			if _, _, err := e.Iprobe(0, 1, AnyTag); !errors.Is(err, ErrPeerLost) {
				t.Fatalf("later probe: %v", err)
			}
			// Rank 2 still works.
			r := e.Irecv(0, 2, 0, make([]byte, 1))
			n.engines[2].Isend(0, 0, 0, []byte{1})
			n.run(nil)
			mustDone(t, r)
		})
	}
}

// TestMessageBeforeLossStillReceivable: what a peer sent before closing is
// still delivered.
func TestMessageBeforeLossStillReceivable(t *testing.T) {
	n := newNet(t, 2, 1, Config{})
	n.engines[1].Isend(0, 0, 4, []byte("last words"))
	n.run(nil)
	n.engines[0].PeerLost(1, driver.ErrPeerClosed)
	b := make([]byte, 10)
	r := n.engines[0].Irecv(0, 1, 4, b)
	if st := mustDone(t, r); st.Count != 10 || string(b) != "last words" {
		t.Fatalf("got %q", b)
	}
}

// TestClosedShowsNothing: once closed, an engine neither receives nor
// shows a message that waited for a receive: a probe that found one its
// receive refuses would be probed again for good.
func TestClosedShowsNothing(t *testing.T) {
	n := newNet(t, 2, 1, Config{})
	n.engines[1].Isend(0, 0, 4, []byte("unread"))
	n.run(nil)
	if _, ok, err := n.engines[0].Iprobe(0, 1, 4); !ok || err != nil {
		t.Fatalf("before close: probe found %v, %v", ok, err)
	}
	n.engines[0].Close()
	if _, ok, err := n.engines[0].Iprobe(0, AnySource, AnyTag); ok || !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: probe found %v, %v; want nothing and ErrClosed", ok, err)
	}
	if _, done, err := n.engines[0].Irecv(0, 1, 4, make([]byte, 6)).Test(); !done || !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: receive done %v, %v; want ErrClosed", done, err)
	}
}

func TestCancelRendezvousSend(t *testing.T) {
	for _, when := range []string{"before-rts-arrives", "unexpected", "crossing-cts"} {
		t.Run(when, func(t *testing.T) {
			n := newNet(t, 2, 1, Config{RendezvousThreshold: 100})
			s := n.engines[0].Isend(0, 1, 0, make([]byte, 1000))
			var r *Request
			switch when {
			case "unexpected":
				n.run(nil)
			case "crossing-cts":
				r = n.engines[1].Irecv(0, 0, 0, make([]byte, 1000))
				n.step(func(int) int { return 0 }) // RTS arrives, CTS in flight
			}
			if !s.Cancel() {
				t.Fatal("cancel refused")
			}
			if _, _, err := s.Test(); !errors.Is(err, ErrCanceled) {
				t.Fatalf("cancelled send: %v", err)
			}
			n.run(nil)
			if r == nil {
				r = n.engines[1].Irecv(0, 0, 0, make([]byte, 1000))
				n.run(nil)
				if _, done, _ := r.Test(); done {
					t.Fatal("receive matched a cancelled send")
				}
				// The next message from the same sender still matches.
				n.engines[0].Isend(0, 1, 0, []byte{1})
				n.run(nil)
				if st := mustDone(t, r); st.Count != 1 {
					t.Fatalf("status %+v", st)
				}
				return
			}
			if _, done, err := r.Test(); !done || !errors.Is(err, ErrCanceled) {
				t.Fatalf("receive matched to a cancelled send: %v %v", done, err)
			}
		})
	}
}

func TestProtocolErrors(t *testing.T) {
	n := newNet(t, 2, 1, Config{})
	e := n.engines[0]
	var hdr [64]byte
	putEagerHeader(hdr[:], 0, 0, 5, 0) // sequence 5 while 0 is expected: held
	if err := e.Packet(1, hdr[:eagerHeaderLen]); err != nil {
		t.Fatalf("early message: %v", err)
	}
	tests := []struct {
		name string
		body []byte
	}{
		{"duplicate sequence", hdr[:eagerHeaderLen]},
		{"short prefix", []byte{1, 0, 0}},
		{"length past end", []byte{1, 0, 0, 0, 200, 0, 0, 0}},
		{"unknown kind", []byte{10, 0, 0, 0, 0, 0, 0, 0}},
		{"short withdrawn", []byte{9, 0, 0, 0, 0, 0, 0, 0}},
		{"withdraw with reserved bits", func() []byte {
			b := make([]byte, withdrawLen)
			putWithdraw(b, 0, 1, 2)
			b[20] = 1
			return b
		}()},
		{"flags set", []byte{4, 1, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"short credit", []byte{4, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0}},
		{"credit overflow", func() []byte { b := make([]byte, creditLen); putCredit(b, 1<<62); return b }()},
		{"rendezvous larger than memory", func() []byte { b := make([]byte, rtsLen); putRTS(b, 0, 0, 0, 1<<63, 1); return b }()},
		{"pull larger than memory", func() []byte { b := make([]byte, rtsPullLen); putRTSPull(b, 0, 0, 0, 1<<63, 1, 4096); return b }()},
	}
	for _, tc := range tests {
		if err := e.Packet(1, tc.body); !errors.Is(err, driver.ErrProtocol) {
			t.Errorf("%s: err %v, want a protocol error", tc.name, err)
		}
	}
	if _, err := e.Region(1, 12345, 0, 1); !errors.Is(err, driver.ErrProtocol) {
		t.Errorf("unknown region: %v", err)
	}
	if err := e.Packet(7, nil); err == nil {
		t.Error("packet from a rank outside the job accepted")
	}
}

// FuzzPacket feeds arbitrary bodies to the engine as if from a peer: it
// must never panic, whatever the bytes.
// The seed corpus is testdata/fuzz/FuzzPacket (see TestFuzzSeeds).
func FuzzPacket(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		n := newNet(t, 2, 1, Config{})
		n.engines[0].Irecv(0, AnySource, AnyTag, make([]byte, 16))
		_ = n.engines[0].Packet(1, body)
		n.run(nil)
	})
}

// TestFuzzSeeds keeps testdata/fuzz/FuzzPacket in step with the entry
// format: one body per entry kind, and one that aggregates several
// (go test -run FuzzSeeds -rewrite-seeds after changing the format).
func TestFuzzSeeds(t *testing.T) {
	mk := func(put func(b []byte), n int) []byte {
		b := make([]byte, n)
		put(b)
		return b
	}
	eager := mk(func(b []byte) { putEagerHeader(b, 0, 1, 0, 4); copy(b[eagerHeaderLen:], "data") }, eagerHeaderLen+4)
	rts := mk(func(b []byte) { putRTS(b, 0, 2, 0, 1<<20, 9) }, rtsLen)
	seeds := []fuzzseed.Seed{
		{Name: "eager", Values: []any{eager}},
		{Name: "rts", Values: []any{rts}},
		{Name: "rts-pull", Values: []any{mk(func(b []byte) { putRTSPull(b, 0, 2, 0, 1<<20, 9, 0x7f0000001000) }, rtsPullLen)}},
		{Name: "cts", Values: []any{mk(func(b []byte) { putCTS(b, 1, 2, 3) }, ctsLen)}},
		{Name: "credit", Values: []any{mk(func(b []byte) { putCredit(b, 10) }, creditLen)}},
		{Name: "cancel", Values: []any{mk(func(b []byte) { putCancel(b, 1) }, cancelLen)}},
		{Name: "fin", Values: []any{mk(func(b []byte) { putFin(b, 1) }, finLen)}},
		{Name: "withdraw", Values: []any{mk(func(b []byte) { putWithdraw(b, 0, 3, 9) }, withdrawLen)}},
		{Name: "withdrawn", Values: []any{mk(func(b []byte) { putWithdrawn(b, 9) }, withdrawnLen)}},
		{Name: "post", Values: []any{mk(func(b []byte) { putPost(b, 0, 2, 0, 64, 5) }, postLen)}},
		{Name: "refuse", Values: []any{mk(func(b []byte) { putRefuse(b, 5, 63) }, refuseLen)}},
		{Name: "rts-report", Values: []any{mk(func(b []byte) { putRTS(b, 0, 2, 0, 1<<20, 9); b[1] = flagReport }, rtsLen)}},
		{Name: "arrived", Values: []any{mk(func(b []byte) { putArrived(b, 1, 40e6) }, arrivedLen)}},
		{Name: "abort", Values: []any{mk(func(b []byte) { putAbort(b, 7) }, abortLen)}},
		{Name: "revoke", Values: []any{mk(func(b []byte) { putRevoke(b, 0x1234) }, revokeLen)}},
		{Name: "aggregated", Values: []any{append(append(append([]byte(nil), eager...), rts...), eager...)}},
	}
	for _, s := range seeds {
		body := s.Values[0].([]byte)
		for rest := body; len(rest) > 0; {
			var e entry
			var err error
			if rest, err = nextEntry(rest, &e); err != nil {
				t.Fatalf("seed %s does not parse: %v", s.Name, err)
			}
		}
	}
	fuzzseed.Sync(t, "FuzzPacket", seeds)
}
