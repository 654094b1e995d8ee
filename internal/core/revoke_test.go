package core

import (
	"errors"
	"testing"
)

// TestRevokeContexts: a revocation fails the unmatched operations of the
// contexts it names — a posted receive, a rendezvous send its receiver
// has not answered — and every later one, leaves other contexts alone,
// and a matched receive of a withdrawn send fails with ErrRevoked, not as
// withdrawn.
func TestRevokeContexts(t *testing.T) {
	n := newNet(t, 2, 1, Config{RendezvousThreshold: 1024})
	a := n.engines[0]
	const ctx, other = 7, 8
	posted := a.Irecv(ctx, 1, 3, make([]byte, 8))
	rts := a.Isend(ctx, 1, 4, make([]byte, 64<<10)) // rendezvous: waits for a CTS
	kept := a.Irecv(other, 1, 3, make([]byte, 8))
	n.run(nil)
	a.RevokeContexts(ctx)
	n.run(nil)
	for name, r := range map[string]*Request{"posted receive": posted, "rendezvous send": rts} {
		if _, done, err := r.Test(); !done || !errors.Is(err, ErrRevoked) {
			t.Errorf("%s: done %t, %v; want ErrRevoked", name, done, err)
		}
	}
	if _, done, _ := kept.Test(); done {
		t.Error("a receive in another context ended")
	}
	for name, r := range map[string]*Request{
		"later send":    a.Isend(ctx, 1, 0, []byte{1}),
		"later receive": a.Irecv(ctx, 1, 0, make([]byte, 1)),
	} {
		if _, done, err := r.Test(); !done || !errors.Is(err, ErrRevoked) {
			t.Errorf("%s: done %t, %v; want ErrRevoked", name, done, err)
		}
	}
	if _, _, err := a.Iprobe(ctx, AnySource, AnyTag); !errors.Is(err, ErrRevoked) {
		t.Errorf("probe of a revoked context: %v", err)
	}
	// The receiver matched the RTS before the cancel came: its receive
	// must fail as revoked.
	n2 := newNet(t, 2, 1, Config{RendezvousThreshold: 1024})
	s := n2.engines[0].Isend(ctx, 1, 4, make([]byte, 64<<10))
	n2.run(nil)
	r := n2.engines[1].Irecv(ctx, 0, 4, make([]byte, 64<<10))
	n2.engines[0].RevokeContexts(ctx) // before the CTS is delivered
	n2.run(nil)
	_, sdone, serr := s.Test()
	_, rdone, rerr := r.Test()
	switch {
	case !sdone || !rdone:
		t.Fatalf("send done %t, receive done %t", sdone, rdone)
	case !errors.Is(serr, ErrRevoked) || !errors.Is(rerr, ErrRevoked):
		t.Errorf("send %v, receive %v; want both ErrRevoked", serr, rerr)
	}
}

// TestRevokeEntry: a peer's revocation reaches the handler once per key,
// however many peers pass it on; this rank's own does not.
func TestRevokeEntry(t *testing.T) {
	n := newNet(t, 3, 1, Config{})
	var heard []uint64
	n.engines[2].SetRevokeHandler(func(key uint64) { heard = append(heard, key) })
	if !n.engines[2].MarkRevoked(5) || n.engines[2].MarkRevoked(5) {
		t.Fatal("MarkRevoked: want true once, then false")
	}
	n.engines[0].AnnounceRevoke(9, []int{0, 1, 2})
	n.engines[1].AnnounceRevoke(9, []int{2})
	n.engines[0].AnnounceRevoke(5, []int{2}) // this rank revoked it itself
	n.run(nil)
	if len(heard) != 1 || heard[0] != 9 {
		t.Fatalf("handler heard %v, want [9]", heard)
	}
	if !n.engines[2].KnownRevoked(9) || n.engines[2].KnownRevoked(10) {
		t.Fatal("KnownRevoked wrong")
	}
}
