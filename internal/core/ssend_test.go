package core

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// TestIssendWaitsForReceive: a synchronous send stays pending, whatever
// its size, until its receiver posts a matching receive: with every frame
// delivered and nothing left in flight it has not completed; once the
// receive is posted it completes, and the receive holds the message. On
// the pulling net the larger messages are read in place (the sync flag
// keeps the policy's method), the smaller ones pushed. The plain Isend
// rows show the check can fail: an eager send completes with no receive.
func TestIssendWaitsForReceive(t *testing.T) {
	type build func(t *testing.T, msg []byte) *net
	plain := func(t *testing.T, _ []byte) *net {
		return newNet(t, 2, 1, Config{RendezvousThreshold: 4096, IovecThreshold: 256})
	}
	pulling := func(t *testing.T, msg []byte) *net {
		n, rails := pullNet(t)
		if len(msg) > 0 {
			rails[1].expose(msg)
		}
		return n
	}
	tests := []struct {
		name  string
		net   build
		size  int
		sync  bool
		pulls uint64 // sends the receiver read in place
	}{
		{"push/0B", plain, 0, true, 0},
		{"push/8B", plain, 8, true, 0},
		{"push/64KiB", plain, 64 << 10, true, 0},
		{"push/1MiB", plain, 1 << 20, true, 0},
		{"pull/0B", pulling, 0, true, 0},
		{"pull/8B", pulling, 8, true, 0},
		{"pull/64KiB", pulling, 64 << 10, true, 1},
		{"pull/1MiB", pulling, 1 << 20, true, 1},
		// Controls: an ordinary eager send does not wait.
		{"eager/0B", plain, 0, false, 0},
		{"eager/8B", plain, 8, false, 0},
	}
	for _, tc := range tests {
		for _, temp := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/temp=%v", tc.name, temp), func(t *testing.T) {
				msg := payload(tc.size, tc.size+1)
				n := tc.net(t, msg)
				var sr *Request
				switch {
				case !tc.sync:
					sr = n.engines[0].Isend(5, 1, 7, msg)
				case temp:
					sr = n.engines[0].IssendTemp(5, 1, 7, msg)
				default:
					sr = n.engines[0].Issend(5, 1, 7, msg)
				}
				// Everything the send produced is delivered; rank 1 has no
				// receive posted, so nothing answers it.
				for i := 0; i < 3; i++ {
					n.run(nil)
				}
				_, done, err := sr.Test()
				if !tc.sync {
					if !done || err != nil {
						t.Fatalf("eager control: done %v err %v before the receive was posted", done, err)
					}
				} else if done {
					t.Fatalf("synchronous send of %d bytes completed before its receive was posted (err %v)", tc.size, err)
				}
				if st := n.engines[1].Pending(5, 0); len(st) != 1 || st[0].Count != tc.size || st[0].Tag != 7 {
					t.Fatalf("rank 1 holds %+v unexpected, want one %d-byte message with tag 7", st, tc.size)
				}
				buf := bytes.Repeat([]byte{0xEE}, tc.size+3)
				rr := n.engines[1].Irecv(5, 0, 7, buf)
				n.run(nil)
				sst := mustDone(t, sr)
				rst := mustDone(t, rr)
				if rst.Source != 0 || rst.Tag != 7 || rst.Count != tc.size || !bytes.Equal(buf[:tc.size], msg) {
					t.Fatalf("receive status %+v; payload equal %v", rst, bytes.Equal(buf[:tc.size], msg))
				}
				if !bytes.Equal(buf[tc.size:], []byte{0xEE, 0xEE, 0xEE}) {
					t.Fatalf("bytes past the message changed: % x", buf[tc.size:])
				}
				if sst.Source != 0 || sst.Tag != 7 {
					t.Fatalf("send status %+v", sst)
				}
				s := n.engines[0].Stats()
				if tc.sync && (s.RendezvousSends != 1 || s.EagerCopySends+s.EagerIovecSends != 0 || s.CreditFallbacks != 0 || s.PullSends != tc.pulls) {
					t.Fatalf("sender stats %+v: want one rendezvous send, %d pulled, no eager send, no credit fallback", s, tc.pulls)
				}
				if tc.sync && n.engines[0].sends[sr.id] != nil {
					t.Fatal("completed send still registered")
				}
				if temp && tc.sync {
					n.engines[0].Release(sr)
				}
			})
		}
	}
}

// TestIssendPostedFirst: with the receive already posted, a synchronous
// send completes on the receiver's answer, as any rendezvous send does,
// at every size; a receive buffer shorter than the message truncates.
func TestIssendPostedFirst(t *testing.T) {
	for _, size := range []int{0, 8, 64 << 10, 1 << 20} {
		for _, room := range []int{size, size / 2} {
			t.Run(fmt.Sprintf("%dB/into%d", size, room), func(t *testing.T) {
				n := newNet(t, 2, 2, Config{RendezvousThreshold: 4096, IovecThreshold: 256})
				msg := payload(size, 3)
				buf := make([]byte, room)
				rr := n.engines[1].Irecv(2, 0, 1, buf)
				sr := n.engines[0].Issend(2, 1, 1, msg)
				n.run(nil)
				mustDone(t, sr)
				st, done, err := rr.Test()
				if !done {
					t.Fatal("receive not complete")
				}
				if room < size {
					var te *TruncateError
					if !errors.As(err, &te) || te.MessageLen != size || te.BufferLen != room {
						t.Fatalf("short receive: err %v", err)
					}
				} else if err != nil {
					t.Fatal(err)
				}
				if st.Count != room || !bytes.Equal(buf, msg[:room]) {
					t.Fatalf("status %+v; payload equal %v", st, bytes.Equal(buf, msg[:room]))
				}
			})
		}
	}
}

// TestIssendCancel: a synchronous send whose receive never came is
// withdrawn by Cancel, at 0 bytes as at others, and a receive posted
// afterwards does not get it.
func TestIssendCancel(t *testing.T) {
	for _, size := range []int{0, 8, 64 << 10} {
		t.Run(fmt.Sprintf("%dB", size), func(t *testing.T) {
			n := newNet(t, 2, 1, Config{RendezvousThreshold: 4096, IovecThreshold: 256})
			sr := n.engines[0].Issend(4, 1, 2, payload(size, 9))
			n.run(nil)
			if !sr.Cancel() {
				t.Fatal("Cancel refused a synchronous send nobody received")
			}
			if _, done, err := sr.Test(); !done || !errors.Is(err, ErrCanceled) {
				t.Fatalf("cancelled send: done %v err %v", done, err)
			}
			n.run(nil)
			rr := n.engines[1].Irecv(4, 0, 2, make([]byte, size))
			n.run(nil)
			if _, done, _ := rr.Test(); done {
				t.Fatal("a receive matched the withdrawn synchronous send")
			}
			if !rr.Cancel() {
				t.Fatal("could not cancel the receive")
			}
		})
	}
}
