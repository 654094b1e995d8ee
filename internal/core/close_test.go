package core

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/sched"
)

// pullRail is a fakeRail that can also read the sender's memory, as CMA
// does, by looking the address up among the buffers the test exposed. On
// each Post it records whether watch had completed by then.
type pullRail struct {
	*fakeRail
	exposed map[uint64][]byte
	watch   *Request
	posts   []bool // per Post: watch completed already
	// pulling, when set, is told of each Pull, which then waits for gate.
	pulling chan struct{}
	gate    chan struct{}
	fail    error // when set, each Pull fails with it (reads forbidden)
}

func (r *pullRail) Caps() driver.Caps {
	c := r.fakeRail.Caps()
	c.SingleCopy = true
	return c
}

func (r *pullRail) Pull(dst []byte, addr uint64) error {
	if r.pulling != nil {
		r.pulling <- struct{}{}
		<-r.gate
	}
	if r.fail != nil {
		return r.fail
	}
	// addr may point inside an exposed buffer (a receive made of segments
	// pulls each part from its own offset).
	for base, msg := range r.exposed {
		if addr >= base && addr < base+uint64(len(msg)) {
			copy(dst, msg[addr-base:])
			return nil
		}
	}
	copy(dst, r.exposed[addr])
	return nil
}

func (r *pullRail) Post(f *driver.Frame) (bool, error) {
	if r.watch != nil {
		r.posts = append(r.posts, r.watch.finished.Load())
	}
	return r.fakeRail.Post(f)
}

// pullNet is newNet with one pulling rail between two ranks, whose
// policy pulls every message above 1 KiB, and extra plain rails.
func pullNet(t *testing.T, extra ...int) (*net, [2]*pullRail) {
	n := &net{t: t}
	var rails [2]*pullRail
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
		rails[r].owner = rails[r]
		n.scheds[r].AddRail(rails[r])
		for i := 0; i < len(extra) && extra[i] > 0; i++ {
			for k := 1; k <= extra[i]; k++ {
				n.scheds[r].AddRail(&fakeRail{n: n, from: r, to: 1 - r, idx: k})
			}
		}
		n.engines[r].Configure()
		if err := n.engines[r].SetPolicy(1-r, Policy{Rendezvous: 1024, Iovec: 1, Large: []LargeMethod{{Min: 1025, Method: MethodPull}}}); err != nil {
			t.Fatal(err)
		}
	}
	return n, rails
}

// expose lets rank 1's rail read msg, as CMA reads rank 0's memory.
func (r *pullRail) expose(msg []byte) {
	r.exposed[uint64(uintptr(unsafe.Pointer(&msg[0])))] = msg
}

// TestFinQueuedBeforeReceiveCompletes: the receiver of a pulled rendezvous
// tells the sender it is done (FIN) before its own receive completes. A
// receiver that closes as soon as its receive returns otherwise finalizes
// with the FIN not yet queued, its goodbye overtakes it, and the sender
// fails a send its peer received.
func TestFinQueuedBeforeReceiveCompletes(t *testing.T) {
	n, rails := pullNet(t)
	msg := payload(64<<10, 7)
	rails[1].expose(msg)
	buf := make([]byte, len(msg))
	rr := n.engines[1].Irecv(0, 0, 0, buf)
	rails[1].watch = rr
	sr := n.engines[0].Isend(0, 1, 0, msg)
	n.run(nil) // RTS to rank 1, which pulls and answers FIN
	mustDone(t, rr)
	mustDone(t, sr)
	if !bytes.Equal(buf, msg) {
		t.Fatal("pulled payload differs")
	}
	if len(rails[1].posts) != 1 || rails[1].posts[0] {
		t.Fatalf("rank 1 posted %d frames; completed before each: %v; want the FIN posted while the receive was still pending", len(rails[1].posts), rails[1].posts)
	}
}
