package core

import (
	"bytes"
	"context"
	"testing"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/sched"
)

// linear returns a rail model of lat ns plus n bytes at mbps MB/s.
func linear(t *testing.T, lat, mbps float64) *sched.RailModel {
	t.Helper()
	var sizes []int64
	var nanos []float64
	for s := int64(1 << 10); s <= 1<<26; s *= 2 {
		sizes = append(sizes, s)
		nanos = append(nanos, lat+float64(s)/(mbps/1000))
	}
	m, err := sched.NewRailModel(sizes, nanos)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestArrivedReport: while the sender's scheduler searches the share of a
// loaded rail, its rendezvous asks the receiver when the data landed, and
// the receiver answers with a kindArrived naming the region, once per
// message and never when not asked.
func TestArrivedReport(t *testing.T) {
	for _, loaded := range []bool{false, true} {
		n := newNet(t, 2, 2, Config{})
		s0 := n.scheds[0]
		s0.SetStrategy(sched.Split{})
		m0, m1 := linear(t, 20e3, 1000), linear(t, 20e3, 1000)
		for _, i := range []int{0, 1} {
			if err := s0.SetModel(1, i, []*sched.RailModel{m0, m1}[i]); err != nil {
				t.Fatal(err)
			}
		}
		if loaded {
			for i := 0; i < 20; i++ { // rail 1 takes 4 times its curve
				m1.Observe(1<<20, 4*m1.Predict(1<<20))
			}
		}
		// A first message lets the scheduler see the load.
		r := n.engines[1].Irecv(0, 0, 1, make([]byte, 8))
		n.engines[0].Isend(0, 1, 1, make([]byte, 8))
		n.run(nil)
		if _, err := r.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := s0.Reports(1); got != loaded {
			t.Fatalf("loaded %v: Reports %v", loaded, got)
		}
		const size = 1 << 20
		msg, got := make([]byte, size), make([]byte, size)
		for i := range msg {
			msg[i] = byte(i * 7)
		}
		r = n.engines[1].Irecv(0, 0, 2, got)
		s := n.engines[0].Isend(0, 1, 2, msg)
		reports := 0
		for n.step(func(k int) int {
			for _, fr := range n.flight {
				if fr.from == 1 && fr.frame.Kind == driver.Packet {
					reports += countArrived(t, fr.frame)
				}
			}
			return 0
		}) {
		}
		if _, err := r.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatal("message damaged")
		}
		want := 0
		if loaded {
			want = 1
		}
		if reports != want {
			t.Fatalf("loaded %v: %d reports, want %d", loaded, reports, want)
		}
		if rail, share := s0.SearchedShare(1); loaded && (rail != 1 || !(share > 0 && share < 1)) {
			t.Fatalf("searched rail %d share %v, want rail 1 and a share", rail, share)
		}
	}
}

// countArrived counts the kindArrived entries in a Packet frame, checking
// each carries a time.
func countArrived(t *testing.T, f *driver.Frame) int {
	var body []byte
	for _, b := range f.Iov {
		body = append(body, b...)
	}
	k := 0
	for len(body) > 0 {
		var en entry
		var err error
		if body, err = nextEntry(body, &en); err != nil {
			t.Fatal(err)
		}
		if en.kind == kindArrived {
			if en.size == 0 || en.region == 0 {
				t.Fatalf("arrived report region %d, %d ns", en.region, en.size)
			}
			k++
		}
	}
	return k
}

// TestEntryFlags: only an RTS may carry a flag, and only flagReport.
func TestEntryFlags(t *testing.T) {
	rts := make([]byte, rtsLen)
	putRTS(rts, 0, 1, 0, 1<<20, 9)
	cts := make([]byte, ctsLen)
	putCTS(cts, 1, 2, 3)
	for _, c := range []struct {
		name  string
		body  []byte
		flags byte
		ok    bool
	}{
		{"rts report", rts, flagReport, true},
		{"rts unknown flag", rts, 2, false},
		{"cts report", cts, flagReport, false},
	} {
		b := bytes.Clone(c.body)
		b[1] = c.flags
		var en entry
		_, err := nextEntry(b, &en)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok %v", c.name, err, c.ok)
		}
		if err == nil && en.flags != c.flags {
			t.Errorf("%s: flags %#x, want %#x", c.name, en.flags, c.flags)
		}
	}
}
