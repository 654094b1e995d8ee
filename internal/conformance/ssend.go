package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/commtune/commtune"
)

// ssendSizes are the synchronous sends' sizes: empty, eager-sized, and
// two that an ordinary send would move by rendezvous (on shared memory
// with CMA, the largest is read in place).
var ssendSizes = []int{0, 8, 64 << 10, 1 << 20}

// ssend: a synchronous send completes only once its receive has matched.
// Ranks pair up (0 with 1, 2 with 3, …; an odd last rank looks on). The
// sender starts an Issend; the receiver waits until the message has
// arrived (Probe), says so on a second communicator, and posts its
// receive only when the sender answers: the sender's request must still
// be pending when it hears the message arrived — nothing has received
// it — and must complete once the receive is posted. The same again for
// the blocking Ssend, run on its own goroutine; then a Ssend whose
// receive was posted first, and a 0-byte Issend that an eager send must
// not overtake.
func ssend(ctx context.Context, world *commtune.Comm) error {
	data, err := world.Dup()
	if err != nil {
		return err
	}
	defer data.Close()
	sig, err := world.Dup()
	if err != nil {
		return err
	}
	defer sig.Close()
	me := world.Rank()
	if me%2 == 0 && me+1 < world.Size() {
		return ssendSender(ctx, data, sig, me+1)
	}
	if me%2 == 1 {
		return ssendReceiver(ctx, data, sig, me-1)
	}
	return nil
}

// ssendSeed is the payload seed of message i from rank src: a receive of
// another pair's message, or of another message, fails the pattern.
func ssendSeed(src, i int) uint32 { return uint32(src*1000 + i + 1) }

func ssendSender(ctx context.Context, data, sig *commtune.Comm, peer int) error {
	me := data.Rank()
	note := make([]byte, 1)
	// heard receives the receiver's note that message i has arrived.
	heard := func(i int) error {
		st, err := sig.Recv(ctx, note, peer, i)
		if err == nil && (st.Count != 1 || note[0] != byte(i)) {
			err = fmt.Errorf("note %d: %d bytes, % x", i, st.Count, note[:st.Count])
		}
		return err
	}
	goAhead := func(i int) error { return sig.Send(ctx, []byte{byte(i)}, peer, i) }
	for k, n := range ssendSizes {
		// Issend.
		i := 2 * k
		q, err := data.Issend(pattern(make([]byte, n), ssendSeed(me, i)), peer, i)
		if err != nil {
			return err
		}
		for j := 0; j < 20; j++ {
			if _, done, err := q.Test(); done {
				return fmt.Errorf("Issend of %d bytes completed (err %v) before its receiver posted a receive", n, err)
			}
			time.Sleep(100 * time.Microsecond)
		}
		if err := heard(i); err != nil {
			return err
		}
		if _, done, err := q.Test(); done {
			return fmt.Errorf("Issend of %d bytes completed (err %v) when its message had arrived and no receive was posted", n, err)
		}
		if err := goAhead(i); err != nil {
			return err
		}
		if st, err := q.Wait(ctx); err != nil {
			return fmt.Errorf("Issend of %d bytes: %w", n, err)
		} else if st.Tag != i {
			return fmt.Errorf("Issend of %d bytes: status %+v", n, st)
		}

		// Ssend, blocking on a goroutine of its own.
		i++
		done := make(chan error, 1)
		go func() { done <- data.Ssend(ctx, pattern(make([]byte, n), ssendSeed(me, i)), peer, i) }()
		if err := heard(i); err != nil {
			return err
		}
		select {
		case err := <-done:
			return fmt.Errorf("Ssend of %d bytes returned (err %v) when its message had arrived and no receive was posted", n, err)
		default:
		}
		if err := goAhead(i); err != nil {
			return err
		}
		if err := <-done; err != nil {
			return fmt.Errorf("Ssend of %d bytes: %w", n, err)
		}
	}
	// The receive posted first: Ssend returns once it matches.
	if _, err := sig.Recv(ctx, note, peer, 100); err != nil {
		return err
	}
	if err := data.Ssend(ctx, pattern(make([]byte, 300), ssendSeed(me, 100)), peer, 100); err != nil {
		return fmt.Errorf("Ssend to a posted receive: %w", err)
	}
	// An empty synchronous send, then an eager one on the same tag: the
	// second must not overtake the first.
	q, err := data.Issend(nil, peer, 101)
	if err != nil {
		return err
	}
	if err := data.Send(ctx, pattern(make([]byte, 8), ssendSeed(me, 101)), peer, 101); err != nil {
		return err
	}
	_, err = q.Wait(ctx)
	return err
}

func ssendReceiver(ctx context.Context, data, sig *commtune.Comm, peer int) error {
	// recv posts a receive of message i once the sender says so, into a
	// buffer longer than the message whose tail must stay as it was.
	recv := func(i, n int) error {
		st, err := data.Probe(ctx, peer, i)
		if err != nil {
			return err
		}
		if st.Count != n {
			return fmt.Errorf("probed message %d: %d bytes, want %d", i, st.Count, n)
		}
		if err := sig.Send(ctx, []byte{byte(i)}, peer, i); err != nil {
			return err
		}
		if _, err := sig.Recv(ctx, make([]byte, 1), peer, i); err != nil {
			return err
		}
		buf := bytes.Repeat([]byte{0xA5}, n+5)
		st, err = data.Recv(ctx, buf, peer, i)
		if err != nil {
			return fmt.Errorf("receive of synchronous message %d: %w", i, err)
		}
		if st.Source != peer || st.Tag != i || st.Count != n {
			return fmt.Errorf("synchronous message %d: status %+v, want %d bytes from %d", i, st, n, peer)
		}
		if !bytes.Equal(buf[n:], bytes.Repeat([]byte{0xA5}, 5)) {
			return fmt.Errorf("synchronous message %d wrote past its %d bytes", i, n)
		}
		return checkPattern(buf[:n], ssendSeed(peer, i))
	}
	for k, n := range ssendSizes {
		if err := recv(2*k, n); err != nil {
			return err
		}
		if err := recv(2*k+1, n); err != nil {
			return err
		}
	}
	buf := make([]byte, 300)
	q, err := data.Irecv(buf, peer, 100)
	if err != nil {
		return err
	}
	if err := sig.Send(ctx, []byte{100}, peer, 100); err != nil {
		return err
	}
	if st, err := q.Wait(ctx); err != nil || st.Count != 300 {
		return fmt.Errorf("posted receive of a Ssend: %+v %v", st, err)
	}
	if err := checkPattern(buf, ssendSeed(peer, 100)); err != nil {
		return err
	}
	b := make([]byte, 8)
	if st, err := data.Recv(ctx, b, peer, 101); err != nil || st.Count != 0 {
		return fmt.Errorf("first message on tag 101: %+v %v, want the empty synchronous one", st, err)
	}
	if st, err := data.Recv(ctx, b, peer, 101); err != nil || st.Count != 8 {
		return fmt.Errorf("second message on tag 101: %+v %v", st, err)
	}
	return checkPattern(b, ssendSeed(peer, 101))
}

// sendrecvReplace: every rank passes a buffer to the next rank with
// SendrecvReplace and gets the previous rank's in its place. Rank r's
// buffer is n+r bytes of its own pattern, so each rank receives a message
// one byte shorter than its buffer (whose last byte stays its own) —
// except rank 0, which receives the last rank's longer message and must
// report truncation with its buffer full of that message's first bytes.
// Once with named ranks and tags, once with AnySource and AnyTag.
func sendrecvReplace(ctx context.Context, world *commtune.Comm) error {
	c, err := world.Dup()
	if err != nil {
		return err
	}
	defer c.Close()
	size, me := c.Size(), c.Rank()
	next, prev := (me+1)%size, (me-1+size)%size
	seed := func(r, k int) uint32 { return uint32(r*7919 + k + 1) }
	for k, n := range []int{0, 1, 100, 64<<10 + 3, 1 << 20} {
		for _, wild := range []bool{false, true} {
			buf := pattern(make([]byte, n+me), seed(me, k))
			mine := append([]byte(nil), buf...)
			src, tag := prev, 50+prev
			if wild {
				src, tag = commtune.AnySource, commtune.AnyTag
			}
			st, err := c.SendrecvReplace(ctx, buf, next, 50+me, src, tag)
			msgLen := n + prev
			got := min(msgLen, len(buf))
			what := fmt.Sprintf("SendrecvReplace of %d bytes (wildcards %v)", len(buf), wild)
			if msgLen > len(buf) {
				var te *commtune.TruncateError
				if !errors.As(err, &te) || te.MessageLen != msgLen || te.BufferLen != len(buf) {
					return fmt.Errorf("%s: a %d-byte message gave err %v, want truncation", what, msgLen, err)
				}
			} else if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			if st.Source != prev || st.Tag != 50+prev || st.Count != got {
				return fmt.Errorf("%s: status %+v, want %d bytes from %d with tag %d", what, st, got, prev, 50+prev)
			}
			want := pattern(make([]byte, msgLen), seed(prev, k))[:got]
			if !bytes.Equal(buf[:got], want) {
				return fmt.Errorf("%s: buffer does not hold rank %d's message", what, prev)
			}
			if !bytes.Equal(buf[got:], mine[got:]) {
				return fmt.Errorf("%s: bytes past the %d received changed", what, got)
			}
		}
	}
	// The typed form, with elements that identify the sender.
	s := []int32{int32(me), int32(me * 3), -int32(me)}
	st, err := commtune.SendrecvReplaceSlice(ctx, c, s, next, 7, prev, 7)
	if err != nil {
		return err
	}
	if commtune.Count[int32](st) != 3 || s[0] != int32(prev) || s[1] != int32(prev*3) || s[2] != -int32(prev) {
		return fmt.Errorf("SendrecvReplaceSlice: %v (%d elements), want rank %d's", s, commtune.Count[int32](st), prev)
	}
	return nil
}
