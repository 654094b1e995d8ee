package inproc

import (
	"errors"
	"testing"

	"github.com/commtune/commtune/internal/driver"
)

// recorder is a Handler that keeps what it receives.
type recorder struct {
	packets []string
	region  []byte
	puts    int
	lost    []error
	refuse  bool
}

func (h *recorder) Packet(peer int, body []byte) error {
	if h.refuse {
		return driver.ProtocolError("refused")
	}
	h.packets = append(h.packets, string(body))
	return nil
}

func (h *recorder) Region(peer int, region uint64, offset int64, n int) ([]byte, error) {
	if region != 7 || int(offset)+n > len(h.region) {
		return nil, driver.ProtocolError("bad region")
	}
	return h.region[offset : int(offset)+n], nil
}

func (h *recorder) PutDone(int, uint64, int64, int) { h.puts++ }
func (h *recorder) Idle(driver.Rail, error)         {}
func (h *recorder) PeerLost(peer int, err error)    { h.lost = append(h.lost, err) }

func TestFabric(t *testing.T) {
	f := NewFabric(2)
	h0, h1 := &recorder{}, &recorder{region: make([]byte, 8)}
	t0 := f.Attach(0, h0)
	f.Attach(1, h1)
	if t0.Rails(0) != nil || len(t0.Rails(1)) != 1 || t0.Rails(5) != nil {
		t.Fatal("rails to self or unknown ranks")
	}
	r := t0.Rails(1)[0]
	tests := []struct {
		name  string
		frame driver.Frame
		check func() bool
	}{
		{"one-part packet", driver.Frame{Kind: driver.Packet, Iov: [][]byte{[]byte("ab")}},
			func() bool { return h1.packets[0] == "ab" }},
		{"gathered packet", driver.Frame{Kind: driver.Packet, Iov: [][]byte{[]byte("c"), []byte("de")}},
			func() bool { return h1.packets[1] == "cde" }},
		{"put lands in the region", driver.Frame{Kind: driver.Put, Region: 7, Offset: 2, Iov: [][]byte{[]byte("xy"), []byte("z")}},
			func() bool { return string(h1.region[2:5]) == "xyz" && h1.puts == 1 }},
	}
	for _, tc := range tests {
		done, err := r.Post(&tc.frame)
		if !done || err != nil || !tc.check() {
			t.Fatalf("%s: done %v err %v", tc.name, done, err)
		}
	}
	if _, err := r.Post(&driver.Frame{Kind: driver.Put, Region: 9, Iov: [][]byte{{1}}}); !errors.Is(err, driver.ErrProtocol) {
		t.Fatalf("put to a bad region: %v", err)
	}
	t0.Close()
	if len(h1.lost) != 1 || !errors.Is(h1.lost[0], driver.ErrPeerClosed) {
		t.Fatalf("orderly close seen as %v", h1.lost)
	}
	if _, err := f.Attach(1, h1).Rails(0)[0].Post(&driver.Frame{Kind: driver.Packet}); err == nil {
		t.Fatal("post to a rank that left succeeded")
	}
}

func TestFailIsNotOrderly(t *testing.T) {
	f := NewFabric(3)
	hs := []*recorder{{}, {}, {}}
	ts := make([]*Transport, 3)
	for i := range hs {
		ts[i] = f.Attach(i, hs[i])
	}
	ts[2].Fail(errors.New("panic"))
	ts[2].Close() // no second report
	for _, i := range []int{0, 1} {
		if len(hs[i].lost) != 1 || errors.Is(hs[i].lost[0], driver.ErrPeerClosed) {
			t.Fatalf("rank %d saw %v", i, hs[i].lost)
		}
	}
}

func TestSelf(t *testing.T) {
	h := &recorder{}
	s := Self(4, h)
	if s.Peer() != 4 || s.Caps().Transport != "self" {
		t.Fatal(s.Caps())
	}
	if done, err := s.Post(&driver.Frame{Kind: driver.Packet, Iov: [][]byte{[]byte("me")}}); !done || err != nil || h.packets[0] != "me" {
		t.Fatal(done, err, h.packets)
	}
}
