package core

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// cancelAsync runs r.Cancel in its own goroutine: for a pulled send it
// waits for the receiver's answer, which the test delivers.
func cancelAsync(r *Request) <-chan bool {
	done := make(chan bool, 1)
	go func() { done <- r.Cancel() }()
	return done
}

// driveUntil delivers frames, oldest first, until done yields.
func driveUntil[T any](t *testing.T, n *net, done <-chan T) T {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		select {
		case v := <-done:
			return v
		default:
		}
		if !n.step(func(int) int { return 0 }) {
			time.Sleep(100 * time.Microsecond)
		}
		if time.Now().After(deadline) {
			t.Fatal("not done after 5 s")
		}
	}
}

// TestWithdrawPulledSend: a pulled send can be taken back until its
// receiver begins to read it — unexpected there, or not yet arrived — and
// the receiver never reads it afterwards; once the read has begun, the
// send completes instead.
func TestWithdrawPulledSend(t *testing.T) {
	t.Run("unexpected", func(t *testing.T) {
		n, rails := pullNet(t)
		msg := payload(64<<10, 3)
		rails[1].expose(msg)
		s := n.engines[0].Isend(0, 1, 5, msg)
		n.run(nil) // RTS-pull lands in rank 1's unexpected queue
		if !driveUntil(t, n, cancelAsync(s)) {
			t.Fatal("withdraw of an unexpected pulled send refused")
		}
		if _, _, err := s.Test(); !errors.Is(err, ErrCanceled) {
			t.Fatalf("withdrawn send: %v", err)
		}
		r := n.engines[1].Irecv(0, 0, 5, make([]byte, len(msg)))
		n.run(nil)
		if _, done, _ := r.Test(); done {
			t.Fatal("a receive matched the withdrawn send")
		}
		n.engines[0].Isend(0, 1, 5, []byte{9}) // the next message matches
		n.run(nil)
		if st := mustDone(t, r); st.Count != 1 {
			t.Fatalf("next message: %+v", st)
		}
	})
	t.Run("before it arrives", func(t *testing.T) {
		n, rails := pullNet(t, 1) // a second rail lets the withdraw overtake
		msg := payload(64<<10, 4)
		rails[1].expose(msg)
		s := n.engines[0].Isend(0, 1, 5, msg)
		done := cancelAsync(s)
		// Deliver the newest frame first: the withdraw, then the RTS-pull.
		var ok bool
		deadline := time.Now().Add(5 * time.Second)
		for got := false; !got; {
			select {
			case ok = <-done:
				got = true
			default:
				if !n.step(func(k int) int { return k - 1 }) {
					time.Sleep(100 * time.Microsecond)
				}
				if time.Now().After(deadline) {
					t.Fatal("cancel did not return")
				}
			}
		}
		if !ok {
			t.Fatal("withdraw before arrival refused")
		}
		n.run(nil) // the RTS-pull arrives now and is dropped
		r := n.engines[1].Irecv(0, 0, 5, make([]byte, len(msg)))
		n.run(nil)
		if _, done, _ := r.Test(); done {
			t.Fatal("a receive matched the withdrawn send")
		}
		if got := n.engines[1].Stats().PulledBytes; got != 0 {
			t.Fatalf("rank 1 pulled %d bytes of a withdrawn send", got)
		}
	})
	t.Run("read begun", func(t *testing.T) {
		// The RTS-pull's rail stays busy while rank 1 reads (it has not
		// reported the frame delivered): the withdraw takes a second rail.
		n, rails := pullNet(t, 1)
		msg := payload(64<<10, 5)
		rails[1].expose(msg)
		rails[1].pulling, rails[1].gate = make(chan struct{}), make(chan struct{})
		buf := make([]byte, len(msg))
		r := n.engines[1].Irecv(0, 0, 5, buf)
		s := n.engines[0].Isend(0, 1, 5, msg)
		delivered := make(chan bool)
		go func() { delivered <- n.step(func(int) int { return 0 }) }() // RTS-pull: rank 1 reads
		<-rails[1].pulling
		done := cancelAsync(s)
		for !n.step(func(int) int { return 0 }) { // the withdraw reaches rank 1: refused
			time.Sleep(100 * time.Microsecond)
		}
		close(rails[1].gate)
		<-delivered
		if driveUntil(t, n, done) {
			t.Fatal("a send whose buffer was being read was withdrawn")
		}
		mustDone(t, s)
		mustDone(t, r)
		if string(buf) != string(msg) {
			t.Fatal("pulled payload differs")
		}
	})
}

// TestPullFallsBackToPush: a read of the sender's memory that fails (a
// peer that forbids it mid-job) is answered with a CTS, and the sender
// pushes the data into the same region. The receive is still to be
// written then, so a withdraw arriving meanwhile is refused as during the
// read, and the send completes instead.
func TestPullFallsBackToPush(t *testing.T) {
	for _, withdraw := range []bool{false, true} {
		name := "pushed"
		if withdraw {
			name = "withdraw refused"
		}
		t.Run(name, func(t *testing.T) {
			n, rails := pullNet(t)
			msg := payload(64<<10, 6)
			rails[1].expose(msg)
			rails[1].fail = errors.New("reads forbidden")
			buf := make([]byte, len(msg))
			r := n.engines[1].Irecv(0, 0, 5, buf)
			s := n.engines[0].Isend(0, 1, 5, msg)
			n.step(func(int) int { return 0 }) // the RTS-pull: the read fails, rank 1 answers CTS
			var cancelled <-chan bool
			if withdraw {
				cancelled = cancelAsync(s)
				// Deliver the withdraw before the CTS.
				fromRank0 := func() int { // under n.mu
					for i, rl := range n.flight {
						if rl.from == 0 {
							return i
						}
					}
					return -1
				}
				deadline := time.Now().Add(5 * time.Second)
				for {
					n.mu.Lock()
					i := fromRank0()
					n.mu.Unlock()
					if i >= 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("no withdraw sent")
					}
					time.Sleep(100 * time.Microsecond)
				}
				n.step(func(int) int { return fromRank0() })
				if _, done, _ := r.Test(); done {
					t.Fatal("a receive awaiting its pushed data was withdrawn")
				}
			}
			n.run(nil) // CTS, then the pushed data
			if withdraw && driveUntil(t, n, cancelled) {
				t.Fatal("a send whose receiver had fallen back to a push was withdrawn")
			}
			mustDone(t, s)
			if st := mustDone(t, r); st.Count != len(msg) {
				t.Fatalf("received %d bytes, want %d", st.Count, len(msg))
			}
			if !bytes.Equal(buf, msg) {
				t.Fatal("pushed payload differs")
			}
			if st := n.engines[1].Stats(); st.PullFallbacks != 1 || st.PulledBytes != 0 {
				t.Fatalf("rank 1: %d pull fallbacks, %d bytes pulled; want 1, 0", st.PullFallbacks, st.PulledBytes)
			}
		})
	}
}
