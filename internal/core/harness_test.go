package core

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/sched"
)

// net is an in-memory network of engines whose rails hold frames until the
// test delivers them, in whatever order it chooses: the engines are driven
// without goroutines or I/O, and reordering across rails is exercised on
// purpose.
type net struct {
	t       *testing.T
	engines []*Engine
	scheds  []*sched.Scheduler
	mu      sync.Mutex
	flight  []*fakeRail // rails holding a frame
}

type fakeRail struct {
	n        *net
	from, to int
	idx      int
	frame    *driver.Frame
	owner    driver.Rail // the rail registered with the scheduler, if it wraps this one
}

func (r *fakeRail) Caps() driver.Caps {
	return driver.Caps{Transport: "fake", Rail: r.idx, MaxPacket: 1 << 20, Iovec: true}
}
func (r *fakeRail) Peer() int { return r.to }
func (r *fakeRail) Post(f *driver.Frame) (bool, error) {
	r.n.mu.Lock()
	defer r.n.mu.Unlock()
	if r.frame != nil {
		r.n.t.Fatalf("rail %d→%d posted while busy", r.from, r.to)
	}
	r.frame = f
	r.n.flight = append(r.n.flight, r)
	return false, nil
}

// newNet builds size engines with rails rails between every pair (and a
// self rail each).
func newNet(t *testing.T, size, rails int, cfg Config) *net {
	n := &net{t: t}
	for r := 0; r < size; r++ {
		sc := sched.New(size, nil)
		e, err := NewEngine(r, size, cfg, sc)
		if err != nil {
			t.Fatal(err)
		}
		n.engines = append(n.engines, e)
		n.scheds = append(n.scheds, sc)
	}
	for r := 0; r < size; r++ {
		for p := 0; p < size; p++ {
			k := rails
			if p == r {
				k = 1
			}
			for i := 0; i < k; i++ {
				n.scheds[r].AddRail(&fakeRail{n: n, from: r, to: p, idx: i})
			}
		}
		n.engines[r].Configure()
	}
	return n
}

// step delivers one in-flight frame chosen by pick (an index into the
// frames in flight) and reports whether there was one.
func (n *net) step(pick func(k int) int) bool {
	n.mu.Lock()
	if len(n.flight) == 0 {
		n.mu.Unlock()
		return false
	}
	i := pick(len(n.flight))
	r := n.flight[i]
	n.flight = append(n.flight[:i], n.flight[i+1:]...)
	f := r.frame
	r.frame = nil
	n.mu.Unlock()

	dst := n.engines[r.to]
	switch f.Kind {
	case driver.Packet:
		var body []byte
		for _, b := range f.Iov {
			body = append(body, b...)
		}
		if err := dst.Packet(r.from, body); err != nil {
			n.t.Fatalf("packet %d→%d: %v", r.from, r.to, err)
		}
	case driver.Put:
		// Region may hand out the memory in pieces (a receive made of
		// segments): each takes the next bytes of the frame.
		total := f.Len()
		iov, pos := f.Iov, 0 // the next byte to place is iov[0][pos]
		for off := 0; off < total || off == 0; {
			piece, err := dst.Region(r.from, f.Region, f.Offset+int64(off), total-off)
			if err != nil {
				n.t.Fatalf("put %d→%d: %v", r.from, r.to, err)
			}
			if total == 0 {
				break
			}
			if len(piece) == 0 || len(piece) > total-off {
				n.t.Fatalf("put %d→%d: Region gave %d bytes for %d at %d", r.from, r.to, len(piece), total-off, off)
			}
			off += len(piece)
			for len(piece) > 0 {
				k := copy(piece, iov[0][pos:])
				piece, pos = piece[k:], pos+k
				if pos == len(iov[0]) {
					iov, pos = iov[1:], 0
				}
			}
		}
		dst.PutDone(r.from, f.Region, f.Offset, total)
	}
	var done driver.Rail = r
	if r.owner != nil {
		done = r.owner
	}
	n.engines[r.from].Idle(done, nil)
	for _, e := range n.engines {
		if err := e.checkEngineStates(); err != nil {
			n.t.Fatal(err)
		}
	}
	return true
}

// run delivers frames until none is in flight, oldest first (fifo) or in a
// random order drawn from rng.
func (n *net) run(rng *rand.Rand) {
	pick := func(int) int { return 0 }
	if rng != nil {
		pick = func(k int) int { return rng.IntN(k) }
	}
	for n.step(pick) {
	}
}
