package halo

import (
	"fmt"
	"testing"
)

// TestPairOrder plays the pair implementations' order on every line
// of up to 9 ranks, open and periodic, with every send synchronous (it
// returns only once its receive is posted, as a rendezvous send does):
// the order must run to the end. ADCL's order (parity for the neighbours,
// and an even coordinate sending first) is played too, and must deadlock
// exactly where expected, blocking Send and Recv on a periodic line of odd
// length, which shows the model catches a deadlock.
func TestPairOrder(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for _, periodic := range []bool{false, true} {
			for _, joint := range []bool{false, true} {
				name := fmt.Sprintf("n%d/periodic=%v/joint=%v", n, periodic, joint)
				t.Run(name, func(t *testing.T) {
					if err := playPairs(n, periodic, joint, pairOrder); err != nil {
						t.Fatal(err)
					}
					err := playPairs(n, periodic, joint, adclOrder)
					if want := !joint && periodic && n%2 == 1 && n > 1; (err != nil) != want {
						t.Fatalf("ADCL's order: %v, want a deadlock: %v", err, want)
					}
				})
			}
		}
	}
}

// adclOrder is ADCL's pair order: an even coordinate takes its −e_d
// neighbour first and sends before it receives, an odd one takes +e_d
// first and receives first.
func adclOrder(ts []xfer, d, coord, n int, periodic bool, plusTag int) error {
	if err := pairOrder(ts, d, coord, n, false, plusTag); err != nil {
		return err
	}
	for i := range ts {
		ts[i].sendFirst = coord%2 == 0
	}
	return nil
}

// playPairs plays one pair phase on a line of n ranks. With joint, each
// transfer is one operation that completes when the peer is at the
// matching transfer (IsendIrecv, SendIrecv, Sendrecv); without, it is a
// blocking Send and Recv in the order sendFirst gives (SendRecv).
func playPairs(n int, periodic, joint bool, order func([]xfer, int, int, int, bool, int) error) error {
	type op struct {
		peer, tag int
		send      bool // SendRecv: a send; joint: unused
		recvTag   int  // joint: the tag received
	}
	s := Shape{Extents: []int{1}, Width: 1, Components: 1, ElemSize: 1}
	plusTag, _ := DirectionIndex([]int{1})
	ops := make([][]op, n)
	for c := range n {
		plan, err := PlanPhased(s, func(o []int) int {
			x := c + o[0]
			if periodic {
				x = (x%n + n) % n
			} else if x < 0 || x >= n {
				return ProcNull
			}
			return x
		})
		if err != nil {
			return err
		}
		var ts []xfer
		for _, tr := range plan.Phases[0].Transfers {
			if tr.Peer != c {
				ts = append(ts, xfer{peer: tr.Peer, sendTag: tr.SendTag, recvTag: tr.RecvTag, local: -1})
			}
		}
		if err := order(ts, 0, c, n, periodic, plusTag); err != nil {
			return err
		}
		for _, t := range ts {
			switch {
			case joint:
				ops[c] = append(ops[c], op{peer: t.peer, tag: t.sendTag, recvTag: t.recvTag})
			case t.sendFirst:
				ops[c] = append(ops[c], op{peer: t.peer, tag: t.sendTag, send: true}, op{peer: t.peer, tag: t.recvTag})
			default:
				ops[c] = append(ops[c], op{peer: t.peer, tag: t.recvTag}, op{peer: t.peer, tag: t.sendTag, send: true})
			}
		}
	}
	for {
		progress, done := false, true
		for a := range n {
			if len(ops[a]) == 0 {
				continue
			}
			done = false
			x := ops[a][0]
			b := x.peer
			if len(ops[b]) == 0 {
				continue
			}
			y := ops[b][0]
			var match bool
			if joint {
				match = y.peer == a && y.tag == x.recvTag && y.recvTag == x.tag
			} else {
				match = y.peer == a && y.tag == x.tag && y.send != x.send
			}
			if match {
				ops[a], ops[b] = ops[a][1:], ops[b][1:]
				progress = true
			}
		}
		if done {
			return nil
		}
		if !progress {
			return fmt.Errorf("deadlock: ranks still at %v", ops)
		}
	}
}

// TestSlab: the Execs of one array share one slab, grown to the largest.
func TestSlab(t *testing.T) {
	var s Slab
	a := s.take(10)
	b := s.take(6)
	if &a[0] != &b[0] || len(b) != 6 || cap(b) != 6 {
		t.Fatalf("a smaller take got other memory or more room: len %d cap %d", len(b), cap(b))
	}
	c := s.take(20)
	if len(c) != 20 || &c[0] == &a[0] {
		t.Fatalf("a larger take: len %d, same memory %v", len(c), &c[0] == &a[0])
	}
	if d := s.take(20); &d[0] != &c[0] {
		t.Fatal("the grown slab is not kept")
	}
}
