package core

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// TestMprobe: a matched probe takes a message out of matching — probes and
// receives no longer see it, the next probe takes the next message — and
// its Mrecv gets it whole, eager or rendezvous, once.
func TestMprobe(t *testing.T) {
	for _, size := range []int{8, 1 << 20} {
		n := newNet(t, 2, 1, Config{})
		a, b := payload(size, 1), payload(size, 2)
		n.engines[0].Isend(0, 1, 7, a)
		n.engines[0].Isend(0, 1, 7, b)
		n.run(nil)
		e := n.engines[1]
		m1, ok, err := e.Improbe(0, AnySource, 7)
		if err != nil || !ok {
			t.Fatalf("size %d: Improbe: %v %v", size, ok, err)
		}
		if st := m1.Status(); st.Source != 0 || st.Tag != 7 || st.Count != size {
			t.Fatalf("size %d: status %+v", size, st)
		}
		m2, err := e.Mprobe(context.Background(), 0, 0, 7)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := e.Iprobe(0, AnySource, AnyTag); ok {
			t.Fatalf("size %d: a probe sees a taken message", size)
		}
		// The second taken message is received first: each handle gets its own.
		got2, got1 := make([]byte, size), make([]byte, size)
		r2 := e.Mrecv(m2, got2)
		r1 := e.Mrecv(m1, got1)
		n.run(nil)
		for _, r := range []*Request{r1, r2} {
			if _, err := r.Wait(context.Background()); err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
		}
		if !bytes.Equal(got1, a) || !bytes.Equal(got2, b) {
			t.Fatalf("size %d: the handles received each other's messages", size)
		}
		if _, err := e.Mrecv(m1, got1).Wait(context.Background()); !errors.Is(err, ErrMessageReceived) {
			t.Fatalf("size %d: second Mrecv: %v", size, err)
		}
	}
}

// TestMprobeWithdrawn: a rendezvous send withdrawn while a matched probe
// holds it is withdrawn for its sender, and the probe's Mrecv fails
// instead of waiting for data that never comes.
func TestMprobeWithdrawn(t *testing.T) {
	n := newNet(t, 2, 1, Config{})
	s := n.engines[0].Isend(0, 1, 3, payload(1<<20, 4))
	n.run(nil)
	m, ok, err := n.engines[1].Improbe(0, 0, 3)
	if err != nil || !ok {
		t.Fatalf("Improbe: %v %v", ok, err)
	}
	if !driveUntil(t, n, cancelAsync(s)) {
		t.Fatal("withdraw of a probed rendezvous refused")
	}
	n.run(nil)
	r := n.engines[1].Mrecv(m, make([]byte, 1<<20))
	n.run(nil)
	var w *WithdrawnError
	if _, err := r.Wait(context.Background()); !errors.As(err, &w) || w.Rank != 0 {
		t.Fatalf("Mrecv of a withdrawn message: %v", err)
	}
}

// TestIrecvAlloc: a receive of unknown size gets a buffer of exactly the
// message's size, eager or rendezvous, posted before the message arrives
// or after.
func TestIrecvAlloc(t *testing.T) {
	for _, size := range []int{0, 100, 1 << 20} {
		for _, early := range []bool{true, false} {
			n := newNet(t, 2, 1, Config{})
			msg := payload(size, 5)
			var r *Request
			if early {
				r = n.engines[1].IrecvAlloc(0, AnySource, 3)
			}
			n.engines[0].Isend(0, 1, 3, msg)
			n.run(nil)
			if !early {
				r = n.engines[1].IrecvAlloc(0, 0, AnyTag)
				n.run(nil)
			}
			st, err := r.Wait(context.Background())
			if err != nil {
				t.Fatalf("size %d early %v: %v", size, early, err)
			}
			if got := r.Buffer(); len(got) != size || st.Count != size || !bytes.Equal(got, msg) {
				t.Fatalf("size %d early %v: %d bytes (status %+v)", size, early, len(got), st)
			}
		}
	}
}
