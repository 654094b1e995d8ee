package sched

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/driver"
)

// pending returns the number of packets queued or in flight to peer.
func pending(s *Scheduler, peer int) int {
	d := s.dests[peer]
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pendingLocked()
}

// rail is a fake rail: synchronous ones finish inside Post, asynchronous
// ones keep the frame until the test calls finish.
type rail struct {
	peer, idx int
	async     bool
	err       error
	mu        sync.Mutex
	frames    []string // "P:<bytes>" or "U:<region>@<off>:<len>"
	pending   bool
}

func (r *rail) Caps() driver.Caps {
	return driver.Caps{Transport: "fake", Rail: r.idx, MaxPacket: 1 << 20}
}
func (r *rail) Peer() int { return r.peer }
func (r *rail) Post(f *driver.Frame) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return false, r.err
	}
	if r.pending {
		panic("posted while busy")
	}
	var s string
	if f.Kind == driver.Put {
		s = "U:" + string(rune('0'+f.Region)) + "@" + string(rune('0'+f.Offset)) + ":" + string(rune('0'+f.Len()))
	} else {
		s = "P:"
		for _, b := range f.Iov {
			s += string(b)
		}
	}
	r.frames = append(r.frames, s)
	r.pending = r.async
	return !r.async, nil
}

type owner struct {
	mu   sync.Mutex
	sent []string
	errs []error
}

func (o *owner) Sent(p *Packet, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sent = append(o.sent, string(p.Head)+string(p.Body))
	o.errs = append(o.errs, err)
}

func eager(o *owner, head, body string) *Packet {
	return &Packet{Kind: Eager, Head: []byte(head), Body: []byte(body), Owner: o}
}

func TestFIFOAndCompletion(t *testing.T) {
	for _, async := range []bool{false, true} {
		s := New(2, nil)
		r := &rail{peer: 1, async: async}
		s.AddRail(r)
		o := &owner{}
		for _, m := range []string{"a", "b", "c"} {
			s.Submit(1, eager(o, m, "!"))
		}
		if async {
			for i := 0; i < 3; i++ {
				if pending(s, 1) == 0 {
					t.Fatal("nothing pending while a frame is in flight")
				}
				r.mu.Lock()
				r.pending = false
				r.mu.Unlock()
				s.Idle(r, nil)
			}
		}
		want := []string{"P:a!", "P:b!", "P:c!"}
		if len(r.frames) != 3 || r.frames[0] != want[0] || r.frames[2] != want[2] {
			t.Fatalf("async=%v frames %v", async, r.frames)
		}
		if len(o.sent) != 3 || o.sent[1] != "b!" {
			t.Fatalf("async=%v completions %v", async, o.sent)
		}
		if pending(s, 1) != 0 {
			t.Fatal("pending after all completed")
		}
	}
}

// TestTwoRails: the default strategy gives each idle rail the next packet.
func TestTwoRails(t *testing.T) {
	s := New(2, Default{})
	r0, r1 := &rail{peer: 1, async: true}, &rail{peer: 1, idx: 1, async: true}
	s.AddRail(r0)
	s.AddRail(r1)
	o := &owner{}
	for _, m := range []string{"a", "b", "c"} {
		s.Submit(1, eager(o, m, ""))
	}
	if len(r0.frames) != 1 || len(r1.frames) != 1 || r0.frames[0] != "P:a" || r1.frames[0] != "P:b" {
		t.Fatalf("frames %v %v", r0.frames, r1.frames)
	}
	r1.pending = false
	s.Idle(r1, nil)
	if len(r1.frames) != 2 || r1.frames[1] != "P:c" {
		t.Fatalf("rail 1 after idle: %v", r1.frames)
	}
}

// splitter plans a Bulk packet as two halves on two rails, to check that
// chunks complete their packet exactly once.
type splitter struct{}

func (splitter) Name() string { return "test-split" }
func (splitter) Schedule(q *Queue, rails []RailState, plan *Plan) {
	p := q.Peek()
	if p.Kind != Bulk {
		Default{}.Schedule(q, rails, plan)
		return
	}
	half := p.Len() / 2
	for i := range rails {
		if rails[i].Busy || p.Remaining() == 0 {
			continue
		}
		n := half
		if p.planned > 0 {
			n = p.Remaining()
		}
		plan.AddBulk(i, p, p.planned, n)
	}
	if p.Remaining() == 0 {
		q.Pop()
	}
}

func TestBulkSplitCompletesOnce(t *testing.T) {
	s := New(2, splitter{})
	r0, r1 := &rail{peer: 1, async: true}, &rail{peer: 1, idx: 1, async: true}
	s.AddRail(r0)
	s.AddRail(r1)
	o := &owner{}
	s.Submit(1, &Packet{Kind: Bulk, Body: []byte("12345678"), Region: 3, Owner: o})
	if r0.frames[0] != "U:3@0:4" || r1.frames[0] != "U:3@4:4" {
		t.Fatalf("chunks %v %v", r0.frames, r1.frames)
	}
	r0.pending = false
	s.Idle(r0, nil)
	if len(o.sent) != 0 {
		t.Fatal("completed after one chunk")
	}
	r1.pending = false
	s.Idle(r1, nil)
	if len(o.sent) != 1 || o.errs[0] != nil {
		t.Fatalf("completions %v %v", o.sent, o.errs)
	}
}

func TestFailAndPostError(t *testing.T) {
	boom := errors.New("boom")
	s := New(3, nil)
	busy := &rail{peer: 1, async: true}
	s.AddRail(busy)
	o := &owner{}
	s.Submit(1, eager(o, "in-flight", ""))
	s.Submit(1, eager(o, "queued", ""))
	s.Fail(1, boom)
	if len(o.sent) != 1 || o.sent[0] != "queued" || o.errs[0] != boom {
		t.Fatalf("after Fail: %v %v", o.sent, o.errs)
	}
	s.Submit(1, eager(o, "later", ""))
	if len(o.sent) != 2 || o.errs[1] != boom {
		t.Fatalf("submit after Fail: %v %v", o.sent, o.errs)
	}
	broken := &rail{peer: 2, err: boom}
	s.AddRail(broken)
	s.Submit(2, eager(o, "x", ""))
	if len(o.sent) != 3 || o.errs[2] != boom {
		t.Fatalf("post error: %v %v", o.sent, o.errs)
	}
}

func TestDrain(t *testing.T) {
	s := New(2, nil)
	r := &rail{peer: 1, async: true}
	s.AddRail(r)
	s.Submit(1, eager(&owner{}, "x", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.Drain(ctx); err == nil {
		t.Fatal("drain returned with a frame in flight")
	}
	r.pending = false
	s.Idle(r, nil)
	if err := s.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSchedulingAllocatesNothing(t *testing.T) {
	s := New(2, nil)
	s.AddRail(nopRail{})
	p := &Packet{Kind: Eager, Head: []byte("h"), Owner: nopOwner{}}
	allocs := testing.AllocsPerRun(1000, func() { s.Submit(1, p) })
	if allocs > 0 {
		t.Fatalf("Submit allocates %.1f times", allocs)
	}
}

type nopOwner struct{}

func (nopOwner) Sent(*Packet, error) {}

type nopRail struct{}

func (nopRail) Caps() driver.Caps                { return driver.Caps{} }
func (nopRail) Peer() int                        { return 1 }
func (nopRail) Post(*driver.Frame) (bool, error) { return true, nil }

func TestSubmitBeforeRail(t *testing.T) {
	s := New(2, nil)
	o := &owner{}
	s.Submit(1, eager(o, "early", ""))
	if len(o.sent) != 0 || pending(s, 1) != 1 {
		t.Fatalf("early packet: sent %v pending %d", o.sent, pending(s, 1))
	}
	r := &rail{peer: 1}
	s.AddRail(r)
	if len(r.frames) != 1 || len(o.sent) != 1 {
		t.Fatalf("after AddRail: frames %v sent %v", r.frames, o.sent)
	}
}

// TestAggregateAndCork: corked packets wait in the queue; on Uncork the
// aggregation strategy packs consecutive Eager packets into one frame up to
// its byte limit, and sends Bulk packets alone.
func TestAggregateAndCork(t *testing.T) {
	tests := []struct {
		name        string
		strategy    Strategy
		want        []string
		eagerFrames int64 // of the 4 Eager packets
	}{
		{"default sends one packet per frame", Default{}, []string{"P:a1", "P:b2", "P:c3", "U:1@0:4", "P:d4"}, 4},
		{"aggregate packs within 4 bytes", Aggregate{Max: 4}, []string{"P:a1b2", "P:c3", "U:1@0:4", "P:d4"}, 3},
		{"aggregate packs all eager packets", Aggregate{Max: 1 << 10}, []string{"P:a1b2c3", "U:1@0:4", "P:d4"}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(2, nil)
			s.SetStrategy(tc.strategy)
			r := &rail{peer: 1}
			s.AddRail(r)
			o := &owner{}
			s.Cork(1)
			s.Submit(1, eager(o, "a", "1"))
			s.Submit(1, eager(o, "b", "2"))
			s.Submit(1, eager(o, "c", "3"))
			s.Submit(1, &Packet{Kind: Bulk, Body: []byte("data"), Region: 1, Owner: o})
			s.Submit(1, eager(o, "d", "4"))
			if len(r.frames) != 0 || pending(s, 1) != 5 {
				t.Fatalf("corked queue sent %v, %d pending", r.frames, pending(s, 1))
			}
			s.Uncork(1)
			if len(r.frames) != len(tc.want) {
				t.Fatalf("frames %v, want %v", r.frames, tc.want)
			}
			for i := range tc.want {
				if r.frames[i] != tc.want[i] {
					t.Fatalf("frames %v, want %v", r.frames, tc.want)
				}
			}
			if len(o.sent) != 5 || pending(s, 1) != 0 {
				t.Fatalf("%d packets completed, %d pending", len(o.sent), pending(s, 1))
			}
			if f, p := s.EagerFrames(1); f != tc.eagerFrames || p != 4 {
				t.Fatalf("EagerFrames = %d frames, %d packets; want %d, 4", f, p, tc.eagerFrames)
			}
		})
	}
}
