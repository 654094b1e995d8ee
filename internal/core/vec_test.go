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
	"github.com/commtune/commtune/internal/sched"
)

// guard fills the gaps between carved segments: a byte written outside a
// segment, or a gap byte sent, shows.
const guard = 0xEE

// layout names a way to cut a message of n bytes into segments; nil sizes
// means one contiguous buffer (Isend/Irecv, not the vector calls).
type layout struct {
	name  string
	sizes func(n int) []int
}

var layouts = []layout{
	{"contiguous", nil},
	{"one segment", func(n int) []int { return []int{n} }},
	{"halves and empties", func(n int) []int { return []int{0, n / 2, 0, 0, n - n/2, 0} }},
	{"odd pieces", func(n int) []int {
		var s []int
		for k := 1; n > 0; k += 6 {
			s = append(s, min(k, n))
			n -= min(k, n)
		}
		return s
	}},
	{"8-byte pieces", func(n int) []int {
		var s []int
		for ; n > 8 && len(s) < 2000; n -= 8 {
			s = append(s, 8)
		}
		return append(s, n)
	}},
}

// carved is a message or receive area cut into segments of one backing
// array, with a guard byte before, between and after them.
type carved struct {
	back []byte
	vec  bool // sent or received by the vector calls
	segs [][]byte
	flat []byte // contiguous layout
}

func carve(l layout, n int) *carved {
	if l.sizes == nil {
		back := bytes.Repeat([]byte{guard}, n+2)
		return &carved{back: back, flat: back[1 : 1+n]}
	}
	sizes := l.sizes(n)
	back := bytes.Repeat([]byte{guard}, n+len(sizes)+1)
	c := &carved{back: back, vec: true}
	pos := 1
	for _, k := range sizes {
		c.segs = append(c.segs, back[pos:pos+k:pos+k])
		pos += k + 1
	}
	return c
}

// fill writes msg into the segments (or the buffer).
func (c *carved) fill(msg []byte) {
	if !c.vec {
		copy(c.flat, msg)
		return
	}
	scatterSegs(c.segs, msg)
}

// clear zeroes the segments (or the buffer), leaving the guards.
func (c *carved) clear() {
	clear(c.flat)
	for _, s := range c.segs {
		clear(s)
	}
}

// bytes returns what the segments (or the buffer) hold, in order.
func (c *carved) bytes() []byte {
	if !c.vec {
		return append([]byte(nil), c.flat...)
	}
	return flatten(c.segs)
}

// guardsIntact reports whether every byte outside the segments is still a
// guard.
func (c *carved) guardsIntact() bool {
	in := make([]bool, len(c.back))
	mark := func(s []byte) {
		if len(s) == 0 {
			return
		}
		off := int(uintptr(unsafe.Pointer(&s[0])) - uintptr(unsafe.Pointer(&c.back[0])))
		for i := range s {
			in[off+i] = true
		}
	}
	mark(c.flat)
	for _, s := range c.segs {
		mark(s)
	}
	for i, b := range c.back {
		if !in[i] && b != guard {
			return false
		}
	}
	return true
}

func (c *carved) isend(e *Engine, ctx uint64, dest, tag int, temp bool) *Request {
	switch {
	case !c.vec && temp:
		return e.IsendTemp(ctx, dest, tag, c.flat)
	case !c.vec:
		return e.Isend(ctx, dest, tag, c.flat)
	case temp:
		return e.IsendVTemp(ctx, dest, tag, c.segs)
	default:
		return e.IsendV(ctx, dest, tag, c.segs)
	}
}

func (c *carved) irecv(e *Engine, ctx uint64, src, tag int, temp bool) *Request {
	switch {
	case !c.vec && temp:
		return e.IrecvTemp(ctx, src, tag, c.flat)
	case !c.vec:
		return e.Irecv(ctx, src, tag, c.flat)
	case temp:
		return e.IrecvVTemp(ctx, src, tag, c.segs)
	default:
		return e.IrecvV(ctx, src, tag, c.segs)
	}
}

// chunker is a strategy that cuts rendezvous data into chunks of size
// bytes over the idle rails: chunks then start inside segments, on either
// side, and arrive in any order.
type chunker struct{ size int }

func (chunker) Name() string { return "test-chunker" }

func (c chunker) Schedule(q *sched.Queue, rails []sched.RailState, plan *sched.Plan) {
	for i := range rails {
		p := q.Peek()
		if p == nil {
			return
		}
		if rails[i].Busy {
			continue
		}
		if p.Kind != sched.Bulk {
			plan.AddEager(i, q.Pop())
			continue
		}
		plan.AddBulk(i, p, p.Len()-p.Remaining(), min(c.size, p.Remaining()))
		if p.Remaining() == 0 {
			q.Pop()
		}
	}
}

// TestVectorMessages sends every size class (empty, eager copy, eager
// iovec, rendezvous) between every pair of layouts, vector or contiguous
// on either side, receive posted first or message unexpected, over two
// rails delivered in a random order, rendezvous data in chunks that start
// inside segments; every byte must arrive and nothing outside the
// receive segments change.
func TestVectorMessages(t *testing.T) {
	cfg := Config{RendezvousThreshold: 4096, IovecThreshold: 256}
	sizes := []struct {
		n                 int
		copy, iovec, rndv uint64
	}{
		{0, 1, 0, 0},
		{100, 1, 0, 0},
		{300, 0, 1, 0},
		{4096, 0, 1, 0},
		{4097, 0, 0, 1},
		{200 << 10, 0, 0, 1},
	}
	seed := uint64(0)
	for _, sz := range sizes {
		for _, sl := range layouts {
			for _, rl := range layouts {
				for _, postFirst := range []bool{true, false} {
					seed++
					temp := seed%3 == 0
					name := fmt.Sprintf("%dB/%s→%s/postFirst=%v/temp=%v", sz.n, sl.name, rl.name, postFirst, temp)
					t.Run(name, func(t *testing.T) {
						rng := rand.New(rand.NewPCG(seed, 3))
						n := newNet(t, 2, 2, cfg)
						for _, sc := range n.scheds {
							sc.SetStrategy(chunker{777})
						}
						msg := payload(sz.n, int(seed))
						snd, rcv := carve(sl, sz.n), carve(rl, sz.n)
						snd.fill(msg)
						rcv.clear()
						var rr *Request
						if postFirst {
							rr = rcv.irecv(n.engines[1], 4, 0, 6, temp)
						}
						sr := snd.isend(n.engines[0], 4, 1, 6, temp)
						n.run(rng)
						if !postFirst {
							rr = rcv.irecv(n.engines[1], 4, 0, 6, temp)
							n.run(rng)
						}
						if st := mustDone(t, sr); st.Count != sz.n {
							t.Fatalf("send status %+v", st)
						}
						st := mustDone(t, rr)
						if st.Count != sz.n || st.Source != 0 || st.Tag != 6 {
							t.Fatalf("receive status %+v", st)
						}
						if !bytes.Equal(rcv.bytes(), msg) {
							t.Fatal("received bytes differ")
						}
						if !rcv.guardsIntact() || !snd.guardsIntact() {
							t.Fatal("bytes outside the segments changed")
						}
						s := n.engines[0].Stats()
						if s.EagerCopySends != sz.copy || s.EagerIovecSends != sz.iovec || s.RendezvousSends != sz.rndv {
							t.Fatalf("sender stats %+v", s)
						}
						if want := b2u(sl.sizes != nil); s.VectorSends != want {
							t.Fatalf("%d vector sends counted, want %d", s.VectorSends, want)
						}
						if want := b2u(rl.sizes != nil); n.engines[1].Stats().VectorRecvs != want {
							t.Fatalf("%d vector receives counted, want %d", n.engines[1].Stats().VectorRecvs, want)
						}
						if temp {
							n.engines[0].Release(sr)
							n.engines[1].Release(rr)
						}
					})
				}
			}
		}
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// TestVectorTruncation: a receive whose segments hold less than the
// message fills them with its first bytes and fails with a TruncateError,
// eager or rendezvous, posted first or not.
func TestVectorTruncation(t *testing.T) {
	cfg := Config{RendezvousThreshold: 4096, IovecThreshold: 256}
	for _, size := range []int{100, 1000, 4097, 64 << 10} {
		for _, rl := range layouts[1:] {
			for _, postFirst := range []bool{true, false} {
				t.Run(fmt.Sprintf("%dB/%s/postFirst=%v", size, rl.name, postFirst), func(t *testing.T) {
					n := newNet(t, 2, 1, cfg)
					msg := payload(size, 5)
					room := size*2/3 + 1
					rcv := carve(rl, room)
					rcv.clear()
					var rr *Request
					if postFirst {
						rr = rcv.irecv(n.engines[1], 0, 0, 0, false)
					}
					sr := n.engines[0].IsendV(0, 1, 0, cut(msg, size/3, 0, size-size/3))
					n.run(nil)
					if !postFirst {
						rr = rcv.irecv(n.engines[1], 0, 0, 0, false)
						n.run(nil)
					}
					mustDone(t, sr)
					st, done, err := rr.Test()
					var te *TruncateError
					if !done || !errors.As(err, &te) || te.MessageLen != size || te.BufferLen != room {
						t.Fatalf("done %v, err %v", done, err)
					}
					if st.Count != room || !bytes.Equal(rcv.bytes(), msg[:room]) || !rcv.guardsIntact() {
						t.Fatalf("count %d; prefix equal %v", st.Count, bytes.Equal(rcv.bytes(), msg[:room]))
					}
				})
			}
		}
	}
}

// TestVectorAnySource: vector receives from any source and with any tag
// match vector and contiguous sends from several ranks, in each sender's
// order.
func TestVectorAnySource(t *testing.T) {
	n := newNet(t, 3, 2, Config{RendezvousThreshold: 2048, IovecThreshold: 64})
	rng := rand.New(rand.NewPCG(9, 9))
	const per = 20
	type recv struct {
		r *Request
		c *carved
	}
	var recvs []recv
	for i := 0; i < 2*per; i++ {
		c := carve(layouts[1+i%4], 8192)
		c.clear()
		recvs = append(recvs, recv{c.irecv(n.engines[2], 1, AnySource, AnyTag, false), c})
	}
	for i := 0; i < per; i++ {
		for src := 0; src < 2; src++ {
			size := []int{2, 50, 500, 3000, 8000}[rng.IntN(5)]
			m := payload(size, src*100+i)
			m[0], m[1] = byte(src), byte(i)
			c := carve(layouts[rng.IntN(len(layouts))], size)
			c.fill(m)
			c.isend(n.engines[src], 1, 2, i, false)
		}
	}
	n.run(rng)
	next := [2]int{}
	for i, rv := range recvs {
		st := mustDone(t, rv.r)
		got := rv.c.bytes()[:st.Count]
		if int(got[0]) != st.Source || int(got[1]) != next[st.Source] || st.Tag != next[st.Source] {
			t.Fatalf("receive %d got message %d from %d (tag %d), want %d", i, got[1], st.Source, st.Tag, next[st.Source])
		}
		if want := payload(st.Count, st.Source*100+next[st.Source]); !bytes.Equal(got[2:], want[2:]) {
			t.Fatalf("receive %d: payload differs", i)
		}
		next[st.Source]++
	}
}

// TestVectorRegionPieces: for a receive made of segments, Region hands out
// the part of one segment at a time, never empty for bytes asked, never
// past the segment or the bytes asked, aliasing the segment's memory.
func TestVectorRegionPieces(t *testing.T) {
	n := newNet(t, 2, 1, Config{RendezvousThreshold: 1024})
	rcv := carve(layouts[3], 10000) // odd pieces
	rr := rcv.irecv(n.engines[1], 0, 0, 0, false)
	n.engines[0].Isend(0, 1, 0, payload(10000, 1))
	for i := 0; i < 2; i++ { // RTS, CTS: the data is in flight next
		n.step(func(int) int { return 0 })
	}
	n.mu.Lock()
	f := n.flight[0].frame
	n.mu.Unlock()
	if f.Kind != driver.Put {
		t.Fatalf("third frame is kind %d, want a put", f.Kind)
	}
	e := n.engines[1]
	seg, segOff := 0, 0
	for off := 0; off < 10000; {
		piece, err := e.Region(0, f.Region, int64(off), 10000-off)
		if err != nil {
			t.Fatal(err)
		}
		for len(rcv.segs[seg]) == 0 {
			seg++
		}
		want := rcv.segs[seg][off-segOff:]
		if len(piece) == 0 || unsafe.SliceData(piece) != unsafe.SliceData(want) || len(piece) != len(want) {
			t.Fatalf("offset %d: piece of %d bytes, want the %d left of segment %d", off, len(piece), len(want), seg)
		}
		off += len(piece)
		segOff += len(rcv.segs[seg])
		seg++
	}
	// Asking for fewer bytes than the segment holds, and from behind.
	if p, _ := e.Region(0, f.Region, 1, 1); len(p) != 1 || &p[0] != &rcv.segs[1][0] {
		t.Fatalf("1 byte at 1: %d bytes", len(p))
	}
	if _, err := e.Region(0, f.Region, 9999, 2); !errors.Is(err, driver.ErrProtocol) {
		t.Fatalf("a piece past the region: %v", err)
	}
	n.run(nil)
	mustDone(t, rr)
}

// TestVectorPull: a vector send is never pulled (the RTS-pull names one
// address): under a policy that pulls it goes by the rail's push. A
// contiguous pulled send lands in a vector receive, read straight into
// the segments, through the rail's vectored pull or one pull per part.
func TestVectorPull(t *testing.T) {
	const size = 64 << 10
	t.Run("vector send is pushed", func(t *testing.T) {
		n, _ := pullNet(t)
		msg := payload(size, 4)
		snd := carve(layouts[4], size)
		snd.fill(msg)
		buf := make([]byte, size)
		rr := n.engines[1].Irecv(0, 0, 0, buf)
		sr := snd.isend(n.engines[0], 0, 1, 0, false)
		n.run(nil)
		mustDone(t, sr)
		mustDone(t, rr)
		if !bytes.Equal(buf, msg) {
			t.Fatal("payload differs")
		}
		if s := n.engines[0].Stats(); s.PullSends != 0 || s.RendezvousSends != 1 {
			t.Fatalf("stats %+v", s)
		}
		if p := n.engines[1].Stats().PulledBytes; p != 0 {
			t.Fatalf("%d bytes pulled", p)
		}
	})
	for _, vectored := range []bool{false, true} {
		for _, rl := range layouts[1:] {
			t.Run(fmt.Sprintf("pulled into %s/vectored=%v", rl.name, vectored), func(t *testing.T) {
				n, rails := pullNet(t)
				var vr *vecPullRail
				if vectored {
					n, rails, vr = vecPullNet(t)
				}
				msg := payload(size, 8)
				rails[1].expose(msg)
				rcv := carve(rl, size)
				rcv.clear()
				rr := rcv.irecv(n.engines[1], 0, 0, 0, false)
				sr := n.engines[0].Isend(0, 1, 0, msg)
				n.run(nil)
				mustDone(t, sr)
				if st := mustDone(t, rr); st.Count != size {
					t.Fatalf("status %+v", st)
				}
				if !bytes.Equal(rcv.bytes(), msg) || !rcv.guardsIntact() {
					t.Fatal("pulled payload differs")
				}
				if p := n.engines[1].Stats().PulledBytes; p != size {
					t.Fatalf("%d bytes pulled", p)
				}
				if vectored && vr.calls != 1 {
					t.Fatalf("%d vectored pulls, want 1", vr.calls)
				}
			})
		}
	}
}

// vecPullRail is a pullRail that also pulls into several parts in one
// call, as the shm rail's process_vm_readv does.
type vecPullRail struct {
	*pullRail
	calls int
}

func (r *vecPullRail) PullV(dst [][]byte, addr uint64) error {
	r.calls++
	for _, b := range dst {
		if err := r.pullRail.Pull(b, addr); err != nil {
			return err
		}
		addr += uint64(len(b))
	}
	return nil
}

// vecPullNet is pullNet whose rank 1 pulls through a vecPullRail.
func vecPullNet(t *testing.T) (*net, [2]*pullRail, *vecPullRail) {
	n := &net{t: t}
	var rails [2]*pullRail
	var vr *vecPullRail
	for r := 0; r < 2; r++ {
		sc := sched.New(2, nil)
		e, err := NewEngine(r, 2, Config{RendezvousThreshold: 1024}, sc)
		if err != nil {
			t.Fatal(err)
		}
		n.engines, n.scheds = append(n.engines, e), append(n.scheds, sc)
	}
	for r := 0; r < 2; r++ {
		n.scheds[r].AddRail(&fakeRail{n: n, from: r, to: r})
		rails[r] = &pullRail{fakeRail: &fakeRail{n: n, from: r, to: 1 - r}, exposed: map[uint64][]byte{}}
		var rail driver.Rail = rails[r]
		if r == 1 {
			vr = &vecPullRail{pullRail: rails[r]}
			rail = vr
		}
		rails[r].owner = rail
		n.scheds[r].AddRail(rail)
		n.engines[r].Configure()
		if err := n.engines[r].SetPolicy(1-r, Policy{Rendezvous: 1024, Iovec: 1, Large: []LargeMethod{{Min: 1025, Method: MethodPull}}}); err != nil {
			t.Fatal(err)
		}
	}
	return n, rails, vr
}

// TestVectorCancelAndLoss: vector requests withdraw, fail with their peer
// and fail at Close exactly as contiguous ones do.
func TestVectorCancelAndLoss(t *testing.T) {
	cfg := Config{RendezvousThreshold: 100}
	segs := func(n int) [][]byte { return cut(make([]byte, n), n/3, 0, n-n/3) }
	t.Run("posted receive cancels", func(t *testing.T) {
		n := newNet(t, 2, 1, cfg)
		r := n.engines[1].IrecvV(0, 0, 0, segs(10))
		if !r.Cancel() {
			t.Fatal("cancel refused")
		}
		if _, _, err := r.Test(); !errors.Is(err, ErrCanceled) {
			t.Fatal(err)
		}
	})
	t.Run("rendezvous send cancels before its CTS", func(t *testing.T) {
		n := newNet(t, 2, 1, cfg)
		s := n.engines[0].IsendV(0, 1, 0, segs(1000))
		n.run(nil) // unexpected at rank 1
		if !s.Cancel() {
			t.Fatal("cancel refused")
		}
		n.run(nil)
		r := n.engines[1].IrecvV(0, 0, 0, segs(1000))
		n.run(nil)
		if _, done, _ := r.Test(); done {
			t.Fatal("a receive matched the cancelled send")
		}
	})
	t.Run("peer lost", func(t *testing.T) {
		n := newNet(t, 2, 1, cfg)
		s := n.engines[0].IsendV(0, 1, 0, segs(1000))  // waits for a CTS
		r := n.engines[0].IrecvV(0, 1, 0, segs(10))    // posted
		n.engines[1].IsendV(0, 0, 1, segs(1000))       // an RTS
		rv := n.engines[0].IrecvV(0, 1, 1, segs(1000)) // matches it...
		n.step(func(k int) int { return k - 1 })       // ...once delivered
		if len(n.engines[0].regions) != 1 {
			t.Fatal("the vector receive did not match the RTS")
		}
		n.engines[0].PeerLost(1, errors.New("gone"))
		for i, q := range []*Request{s, r, rv} {
			if _, done, err := q.Test(); !done || !errors.Is(err, ErrPeerLost) {
				t.Fatalf("request %d: done %v, %v", i, done, err)
			}
		}
	})
	t.Run("close", func(t *testing.T) {
		n := newNet(t, 2, 1, cfg)
		s := n.engines[0].IsendV(0, 1, 0, segs(1000))
		r := n.engines[0].IrecvV(0, 1, 0, segs(10))
		n.engines[0].Close()
		for _, q := range []*Request{s, r} {
			if _, done, err := q.Test(); !done || !errors.Is(err, ErrClosed) {
				t.Fatalf("done %v, %v", done, err)
			}
		}
		if _, done, err := n.engines[0].IsendV(0, 1, 0, segs(3)).Test(); !done || !errors.Is(err, ErrClosed) {
			t.Fatalf("send after close: %v %v", done, err)
		}
	})
	t.Run("bad arguments", func(t *testing.T) {
		n := newNet(t, 2, 1, cfg)
		if _, done, err := n.engines[0].IsendV(0, 5, 0, segs(3)).Test(); !done || err == nil {
			t.Fatal("send to a rank outside the job")
		}
		if _, done, err := n.engines[0].IrecvV(0, 0, -7, segs(3)).Test(); !done || err == nil {
			t.Fatal("receive with a bad tag")
		}
	})
}

// TestVectorRendezvousAllocations: a steady-state 1 MiB vector
// rendezvous, 8 segments each way, allocates bookkeeping only.
func TestVectorRendezvousAllocations(t *testing.T) {
	n := newNet(t, 2, 1, Config{RendezvousThreshold: 1024})
	msg := payload(1<<20, 3)
	buf := make([]byte, 1<<20)
	ssegs, rsegs := cut(msg, segSizes(1<<20, 8)...), cut(buf, segSizes(1<<20, 8)...)
	once := func() {
		rr := n.engines[1].IrecvV(0, 0, 0, rsegs)
		n.engines[0].IsendV(0, 1, 0, ssegs)
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
	if perOp := (after.TotalAlloc - before.TotalAlloc) / iters; perOp > 16<<10 {
		t.Fatalf("a 1 MiB vector rendezvous allocates %d bytes per message", perOp)
	}
	if !bytes.Equal(buf, msg) {
		t.Fatal("payload differs")
	}
}

func segSizes(n, k int) []int {
	s := make([]int, k)
	for i := range s {
		s[i] = n / k
	}
	s[k-1] += n % k
	return s
}
