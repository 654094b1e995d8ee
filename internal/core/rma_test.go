package core

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/sched"
)

// TestPutIntoExposed puts every size, from layouts of either kind into
// layouts of either kind, with the post arriving before or after the put
// is posted, over two rails delivered in a random order and data cut into
// chunks that start inside segments: every byte lands, nothing outside
// the exposed segments changes, and both sides report the size.
func TestPutIntoExposed(t *testing.T) {
	sizes := []int{0, 1, 7, 100, 4096, 70_000}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range sizes {
		for _, from := range layouts[1:] { // the one-sided calls take segments only
			for _, into := range layouts[1:] {
				for _, postFirst := range []bool{true, false} {
					n := newNet(t, 2, 2, Config{})
					for _, s := range n.scheds {
						s.SetStrategy(chunker{size: 333})
					}
					msg := make([]byte, size)
					for i := range msg {
						msg[i] = byte(rng.Uint32()) | 1
					}
					src, dst := carve(from, size), carve(into, size)
					src.fill(msg)
					var put, exp *Request
					if postFirst {
						exp = n.engines[1].Expose(9, 0, 4, dst.segs)
						n.run(rng)
						put = n.engines[0].PutV(9, 1, 4, src.segs)
					} else {
						put = n.engines[0].PutV(9, 1, 4, src.segs)
						exp = n.engines[1].Expose(9, 0, 4, dst.segs)
					}
					n.run(rng)
					name := from.name + " into " + into.name
					pst, pdone, perr := put.Test()
					est, edone, eerr := exp.Test()
					if !pdone || !edone || perr != nil || eerr != nil {
						t.Fatalf("%d bytes %s: put done %v %v, exposure done %v %v", size, name, pdone, perr, edone, eerr)
					}
					if pst.Count != size || est.Count != size || est.Source != 0 || est.Tag != 4 {
						t.Fatalf("%d bytes %s: put %+v, exposure %+v", size, name, pst, est)
					}
					if !bytes.Equal(dst.bytes(), msg) || !dst.guardsIntact() {
						t.Fatalf("%d bytes %s: wrong bytes landed", size, name)
					}
				}
			}
		}
	}
}

// TestPutOrderAndRefusal: puts match posts of one target in post order,
// per tag; a put of the wrong size fails and so does the exposure it
// refused; a put meeting a message (a context used for both) fails.
func TestPutOrderAndRefusal(t *testing.T) {
	segs := func(b ...[]byte) [][]byte { return b }
	t.Run("post order", func(t *testing.T) {
		n := newNet(t, 2, 1, Config{})
		a, b, c := make([]byte, 3), make([]byte, 3), make([]byte, 3)
		ea := n.engines[1].Expose(1, 0, 5, segs(a))
		eb := n.engines[1].Expose(1, 0, 6, segs(b))
		ec := n.engines[1].Expose(1, 0, 5, segs(c))
		n.run(nil)
		n.engines[0].PutV(1, 1, 6, segs([]byte("BBB")))
		n.engines[0].PutV(1, 1, 5, segs([]byte("AAA")))
		n.engines[0].PutV(1, 1, 5, segs([]byte("CCC")))
		n.run(nil)
		for _, r := range []*Request{ea, eb, ec} {
			if _, done, err := r.Test(); !done || err != nil {
				t.Fatal(done, err)
			}
		}
		if string(a)+string(b)+string(c) != "AAABBBCCC" {
			t.Fatalf("landed %q %q %q", a, b, c)
		}
	})
	t.Run("wrong size", func(t *testing.T) {
		n := newNet(t, 2, 1, Config{})
		exp := n.engines[1].Expose(1, 0, 0, segs(make([]byte, 10)))
		put := n.engines[0].PutV(1, 1, 0, segs(make([]byte, 11)))
		n.run(nil)
		if _, done, err := put.Test(); !done || err == nil || !strings.Contains(err.Error(), "11 bytes into a 10-byte region") {
			t.Fatalf("put: %v %v", done, err)
		}
		if _, done, err := exp.Test(); !done || err == nil || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("exposure: %v %v", done, err)
		}
	})
	t.Run("mixed context", func(t *testing.T) {
		n := newNet(t, 2, 1, Config{})
		put := n.engines[0].PutV(1, 1, 0, segs(make([]byte, 4)))
		n.engines[1].Isend(1, 0, 0, []byte("oops"))
		n.run(nil)
		if _, done, err := put.Test(); !done || err == nil || !strings.Contains(err.Error(), "mixes") {
			t.Fatalf("put: %v %v", done, err)
		}
		recv := n.engines[0].Irecv(1, 1, 1, make([]byte, 4))
		exp := n.engines[1].Expose(1, 0, 1, segs(make([]byte, 4)))
		n.run(nil)
		if _, done, err := recv.Test(); !done || err == nil {
			t.Fatalf("receive: %v %v", done, err)
		}
		if _, done, err := exp.Test(); !done || err == nil {
			t.Fatalf("exposure: %v %v", done, err)
		}
	})
}

// TestPutLossAndCancel: a lost peer fails waiting puts and exposures, a
// waiting put cancels, and bad arguments fail at once.
func TestPutLossAndCancel(t *testing.T) {
	n := newNet(t, 2, 1, Config{})
	put := n.engines[0].PutV(1, 1, 0, [][]byte{make([]byte, 4)})
	exp := n.engines[0].Expose(1, 1, 3, [][]byte{make([]byte, 4)})
	n.engines[0].PeerLost(1, errors.New("gone"))
	for i, r := range []*Request{put, exp} {
		if _, done, err := r.Test(); !done || !errors.Is(err, ErrPeerLost) {
			t.Fatalf("request %d: %v %v", i, done, err)
		}
	}
	n = newNet(t, 2, 1, Config{})
	put = n.engines[0].PutV(1, 1, 0, [][]byte{make([]byte, 4)})
	if !put.Cancel() {
		t.Fatal("a waiting put did not cancel")
	}
	for i, r := range []*Request{
		n.engines[0].PutV(1, 7, 0, nil),
		n.engines[0].PutV(1, 1, -1, nil),
		n.engines[0].Expose(1, 7, 0, nil),
		n.engines[0].Expose(1, 1, -1, nil),
	} {
		if _, done, err := r.Test(); !done || err == nil {
			t.Fatalf("bad call %d: %v %v", i, done, err)
		}
	}
}

// TestWithdrawExposure: an exposure no byte has reached is withdrawn by
// Cancel; a put its origin sends anyway lands nowhere — not in the
// withdrawn segments, not as a protocol error that would drop the rail —
// and the next exposure between the two ranks works.
func TestWithdrawExposure(t *testing.T) {
	for _, tc := range []struct {
		name      string
		putBefore bool // the origin's put is posted before the withdrawal
	}{{"put posted after", false}, {"put posted before", true}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			n := newNet(t, 2, 2, Config{})
			dst := make([]byte, 5000)
			exp := n.engines[1].Expose(9, 0, 4, [][]byte{dst})
			var put *Request
			if tc.putBefore {
				put = n.engines[0].PutV(9, 1, 4, [][]byte{bytes.Repeat([]byte{7}, 5000)})
			}
			if !exp.Cancel() {
				t.Fatal("an exposure no byte had reached did not cancel")
			}
			if !tc.putBefore {
				put = n.engines[0].PutV(9, 1, 4, [][]byte{bytes.Repeat([]byte{7}, 5000)})
			}
			n.run(rng)
			if _, done, err := exp.Test(); !done || !errors.Is(err, ErrCanceled) {
				t.Fatalf("withdrawn exposure: done %v, %v", done, err)
			}
			if _, done, err := put.Test(); !done || err != nil {
				t.Fatalf("put into the withdrawn exposure: done %v, %v", done, err)
			}
			if bytes.IndexByte(dst, 7) >= 0 {
				t.Fatal("the put landed in withdrawn memory")
			}
			if exp.Cancel() {
				t.Fatal("a completed exposure cancelled again")
			}
			again := make([]byte, 10)
			exp = n.engines[1].Expose(9, 0, 4, [][]byte{again})
			put = n.engines[0].PutV(9, 1, 4, [][]byte{[]byte("0123456789")})
			n.run(rng)
			if _, _, err := exp.Test(); err != nil || string(again) != "0123456789" {
				t.Fatalf("the next exposure: %v, %q", err, again)
			}
		})
	}
}

// TestReadableBy: a peer can read this rank's memory when any rail to it
// offers single copy, not only the first; never this rank itself, nor a
// rank outside the job.
func TestReadableBy(t *testing.T) {
	tests := []struct {
		name   string
		single []bool // per rail to the peer: offers single copy
		want   bool
	}{
		{"one plain rail", []bool{false}, false},
		{"one single-copy rail", []bool{true}, true},
		{"single copy on the second rail", []bool{false, true}, true},
		{"single copy on the first rail", []bool{true, false}, true},
		{"two plain rails", []bool{false, false}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := &net{t: t}
			sc := sched.New(2, nil)
			e, err := NewEngine(0, 2, Config{}, sc)
			if err != nil {
				t.Fatal(err)
			}
			n.engines, n.scheds = append(n.engines, e), append(n.scheds, sc)
			sc.AddRail(&fakeRail{n: n, from: 0, to: 0})
			for i, single := range tc.single {
				var r driver.Rail = &fakeRail{n: n, from: 0, to: 1, idx: i}
				if single {
					r = &pullRail{fakeRail: &fakeRail{n: n, from: 0, to: 1, idx: i}}
				}
				sc.AddRail(r)
			}
			e.Configure()
			if got := e.ReadableBy(1); got != tc.want {
				t.Errorf("ReadableBy(1) = %v, want %v", got, tc.want)
			}
			if e.ReadableBy(0) || e.ReadableBy(2) || e.ReadableBy(-1) {
				t.Error("ReadableBy of itself or of a rank outside the job")
			}
		})
	}
}
