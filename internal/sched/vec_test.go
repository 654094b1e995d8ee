package sched

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/commtune/commtune/internal/driver"
)

// iovRail records each frame's iovec as posted: the parts, not only their
// concatenation, so a test sees that a Vec payload went by reference.
type iovRail struct {
	peer, idx int
	async     bool
	mu        sync.Mutex
	frames    []driver.Frame // Iov copied part by part (the slot reuses its array)
}

func (r *iovRail) Caps() driver.Caps {
	return driver.Caps{Transport: "fake", Rail: r.idx, MaxPacket: 1 << 20, Iovec: true}
}
func (r *iovRail) Peer() int { return r.peer }
func (r *iovRail) Post(f *driver.Frame) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := *f
	g.Iov = append([][]byte(nil), f.Iov...)
	r.frames = append(r.frames, g)
	return !r.async, nil
}

type vecOwner struct {
	mu   sync.Mutex
	sent []*Packet
}

func (o *vecOwner) Sent(p *Packet, err error) {
	o.mu.Lock()
	o.sent = append(o.sent, p)
	o.mu.Unlock()
}

func cat(iov [][]byte) []byte {
	var b []byte
	for _, p := range iov {
		b = append(b, p...)
	}
	return b
}

// parts cuts flat into parts of the given sizes (0 makes an empty part).
func parts(flat []byte, sizes ...int) [][]byte {
	var out [][]byte
	for _, n := range sizes {
		out = append(out, flat[:n:n])
		flat = flat[n:]
	}
	return out
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

// TestVecEager: an Eager packet with a Vec payload is its header followed by
// every non-empty part, by reference, and counts its parts' bytes.
func TestVecEager(t *testing.T) {
	many := make([]int, 2000)
	for i := range many {
		many[i] = 8
	}
	tests := []struct {
		name  string
		sizes []int
	}{
		{"one part", []int{5}},
		{"several parts", []int{3, 1, 4}},
		{"empty parts are left out", []int{0, 2, 0, 0, 3, 0}},
		{"nothing but empty parts", []int{0, 0}},
		{"no parts", nil},
		{"more parts than IOV_MAX", many},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			total := 0
			nonEmpty := 0
			for _, n := range tc.sizes {
				total += n
				if n > 0 {
					nonEmpty++
				}
			}
			flat := pattern(total)
			vec := parts(flat, tc.sizes...)
			if vec == nil {
				vec = [][]byte{}
			}
			s := New(2, nil)
			r := &iovRail{peer: 1}
			s.AddRail(r)
			o := &vecOwner{}
			p := &Packet{Kind: Eager, Head: []byte("HDR"), Vec: vec, Owner: o}
			if p.Len() != 3+total {
				t.Fatalf("Len before Submit %d, want %d", p.Len(), 3+total)
			}
			s.Submit(1, p)
			if len(r.frames) != 1 || len(o.sent) != 1 {
				t.Fatalf("%d frames, %d completions", len(r.frames), len(o.sent))
			}
			f := r.frames[0]
			if len(f.Iov) != 1+nonEmpty {
				t.Fatalf("%d iovec parts, want %d", len(f.Iov), 1+nonEmpty)
			}
			if got := cat(f.Iov); !bytes.Equal(got, append([]byte("HDR"), flat...)) {
				t.Fatal("frame bytes differ")
			}
			for _, b := range f.Iov[1:] {
				if &b[0] != &flat[0] && !within(b, flat) {
					t.Fatal("a part was copied")
				}
			}
			if p.Len() != 3+total {
				t.Fatalf("Len %d, want %d", p.Len(), 3+total)
			}
		})
	}
}

// within reports whether b's memory lies inside flat's.
func within(b, flat []byte) bool {
	for i := range flat {
		if &flat[i] == &b[0] {
			return true
		}
	}
	return false
}

// TestVecBulkChunks: a Bulk packet whose payload is a Vec, split over two
// rails at every possible point, sends each chunk as the sub-list of parts
// covering it (no copy), at the right region offset, and completes once.
func TestVecBulkChunks(t *testing.T) {
	layouts := [][]int{{10}, {3, 0, 4, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {0, 9, 0, 1, 0}}
	for li, sizes := range layouts {
		for cut := 1; cut < 10; cut++ {
			t.Run(fmt.Sprintf("layout %d cut %d", li, cut), func(t *testing.T) {
				flat := pattern(10)
				vec := parts(flat, sizes...)
				s := New(2, fixedSplit{cut})
				r0, r1 := &iovRail{peer: 1, async: true}, &iovRail{peer: 1, idx: 1, async: true}
				s.AddRail(r0)
				s.AddRail(r1)
				o := &vecOwner{}
				s.Submit(1, &Packet{Kind: Bulk, Vec: vec, Region: 9, Offset: 100, Owner: o})
				if len(r0.frames) != 1 || len(r1.frames) != 1 {
					t.Fatalf("frames %d %d", len(r0.frames), len(r1.frames))
				}
				f0, f1 := r0.frames[0], r1.frames[0]
				if f0.Kind != driver.Put || f0.Region != 9 || f0.Offset != 100 || f1.Offset != 100+int64(cut) {
					t.Fatalf("frames %+v %+v", f0, f1)
				}
				if !bytes.Equal(cat(f0.Iov), flat[:cut]) || !bytes.Equal(cat(f1.Iov), flat[cut:]) {
					t.Fatalf("chunks %v %v of %v", cat(f0.Iov), cat(f1.Iov), flat)
				}
				for _, f := range []driver.Frame{f0, f1} {
					for _, b := range f.Iov {
						if len(b) == 0 || !within(b, flat) {
							t.Fatal("an empty or copied part")
						}
					}
				}
				s.Idle(r0, nil)
				if len(o.sent) != 0 {
					t.Fatal("completed after one chunk")
				}
				s.Idle(r1, nil)
				if len(o.sent) != 1 {
					t.Fatalf("%d completions", len(o.sent))
				}
			})
		}
	}
}

// fixedSplit plans a Bulk packet as [0, cut) on the first idle rail and
// the rest on the next.
type fixedSplit struct{ cut int }

func (fixedSplit) Name() string { return "test-fixed-split" }
func (fs fixedSplit) Schedule(q *Queue, rails []RailState, plan *Plan) {
	p := q.Peek()
	if p.Kind != Bulk {
		Default{}.Schedule(q, rails, plan)
		return
	}
	for i := range rails {
		if rails[i].Busy || p.Remaining() == 0 {
			continue
		}
		n := p.Remaining()
		if p.planned == 0 {
			n = fs.cut
		}
		plan.AddBulk(i, p, p.planned, n)
	}
	if p.Remaining() == 0 {
		q.Pop()
	}
}

// TestVecFailCompletes: a queued Vec Bulk packet fails whole when its peer
// is lost.
func TestVecFailCompletes(t *testing.T) {
	s := New(2, nil)
	busy := &iovRail{peer: 1, async: true}
	s.AddRail(busy)
	o := &vecOwner{}
	s.Submit(1, &Packet{Kind: Eager, Head: []byte("h"), Owner: o}) // occupies the rail
	s.Submit(1, &Packet{Kind: Bulk, Vec: parts(pattern(6), 2, 4), Region: 1, Owner: o})
	s.Fail(1, fmt.Errorf("gone"))
	if len(o.sent) != 1 || o.sent[0].Kind != Bulk {
		t.Fatalf("completions %v", o.sent)
	}
}

// TestVecSchedulingAllocatesNothing: once the slot's iovec has grown,
// sending Vec packets, Eager or Bulk, allocates nothing.
func TestVecSchedulingAllocatesNothing(t *testing.T) {
	vec := parts(pattern(64), 8, 0, 8, 16, 32)
	tests := []struct {
		name string
		p    *Packet
	}{
		{"eager", &Packet{Kind: Eager, Head: []byte("h"), Vec: vec, Owner: nopOwner{}}},
		{"bulk", &Packet{Kind: Bulk, Vec: vec, Region: 1, Owner: nopOwner{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(2, nil)
			s.AddRail(nopRail{})
			s.Submit(1, tc.p)
			if allocs := testing.AllocsPerRun(1000, func() { s.Submit(1, tc.p) }); allocs > 0 {
				t.Fatalf("Submit allocates %.1f times", allocs)
			}
		})
	}
}
