package commtune

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSsendBadArguments: synchronous sends and SendrecvReplace refuse a
// rank outside the communicator, a bad tag and a type that cannot move as
// memory with an error that names the problem, and leave nothing behind:
// a message sent afterwards on the same tag is the one received.
func TestSsendBadArguments(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := Local(1, func(c *Comm) error {
		buf := make([]byte, 4)
		tests := []struct {
			name, want string
			call       func() error
		}{
			{"Ssend to rank 1", "destination rank 1", func() error { return c.Ssend(ctx, buf, 1, 0) }},
			{"Ssend tag -1", "tag -1", func() error { return c.Ssend(ctx, buf, 0, -1) }},
			{"Issend to rank -1", "destination rank -1", func() error { _, err := c.Issend(buf, -1, 0); return err }},
			{"Issend tag AnyTag", "tag -1", func() error { _, err := c.Issend(buf, 0, AnyTag); return err }},
			{"SendrecvReplace to rank 3", "destination rank 3", func() error {
				_, err := c.SendrecvReplace(ctx, buf, 3, 0, 0, 0)
				return err
			}},
			{"SendrecvReplace from rank 2", "source rank 2", func() error {
				_, err := c.SendrecvReplace(ctx, buf, 0, 0, 2, 0)
				return err
			}},
			{"SendrecvReplace send tag AnyTag", "tag -1", func() error {
				_, err := c.SendrecvReplace(ctx, buf, 0, AnyTag, 0, 0)
				return err
			}},
			{"SsendSlice of strings", "not a plain type", func() error { return SsendSlice(ctx, c, []string{"x"}, 0, 0) }},
			{"IssendSlice of pointers", "not a plain type", func() error { _, err := IssendSlice(c, []*int{nil}, 0, 0); return err }},
			{"SendrecvReplaceSlice of bools", "not a plain type", func() error {
				_, err := SendrecvReplaceSlice(ctx, c, []bool{true}, 0, 0, 0, 0)
				return err
			}},
		}
		for _, tc := range tests {
			if err := tc.call(); err == nil || !strings.Contains(err.Error(), tc.want) {
				return fmt.Errorf("%s: err %v, want one naming %q", tc.name, err, tc.want)
			}
		}
		// Nothing was sent or left posted by the refused calls.
		if _, ok, err := c.Iprobe(AnySource, AnyTag); ok || err != nil {
			return fmt.Errorf("a refused call left a message: %v %v", ok, err)
		}
		if err := c.Send(ctx, []byte("next"), 0, 0); err != nil {
			return err
		}
		if _, err := c.Recv(ctx, buf, 0, 0); err != nil || string(buf) != "next" {
			return fmt.Errorf("message after the refused calls: %q %v", buf, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIssendSelf: a synchronous send to one's own rank stays pending
// until the rank posts the receive, at every size, and its typed form
// and the blocking Ssend to a posted receive work the same way.
func TestIssendSelf(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := Local(1, func(c *Comm) error {
		for i, n := range []int{0, 8, 64 << 10, 1 << 20} {
			msg := bytes.Repeat([]byte{byte(i + 1)}, n)
			q, err := c.Issend(msg, 0, i)
			if err != nil {
				return err
			}
			for j := 0; j < 10; j++ {
				if _, done, err := q.Test(); done {
					return fmt.Errorf("self Issend of %d bytes completed (err %v) with no receive posted", n, err)
				}
				time.Sleep(time.Millisecond)
			}
			buf := make([]byte, n)
			if st, err := c.Recv(ctx, buf, 0, i); err != nil || st.Count != n || !bytes.Equal(buf, msg) {
				return fmt.Errorf("self receive of %d bytes: %+v %v", n, st, err)
			}
			if _, err := q.Wait(ctx); err != nil {
				return err
			}
		}
		in := make([]float64, 3)
		r, err := IrecvSlice(c, in, 0, 9)
		if err != nil {
			return err
		}
		if err := SsendSlice(ctx, c, []float64{1.5, -2, 3}, 0, 9); err != nil {
			return err
		}
		if st, err := r.Wait(ctx); err != nil || Count[float64](st) != 3 || in[0] != 1.5 || in[1] != -2 || in[2] != 3 {
			return fmt.Errorf("typed self Ssend: %v %+v %v", in, st, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSsendContext: a blocking Ssend nobody receives gives up when its
// context ends and withdraws the message, so a receive posted later
// gets the next message instead.
func TestSsendContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := Local(2, func(c *Comm) error {
		if c.Rank() == 0 {
			short, stop := context.WithTimeout(ctx, 20*time.Millisecond)
			defer stop()
			if err := c.Ssend(short, []byte("lost"), 1, 4); !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("Ssend with no receive: %v, want the deadline", err)
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			return c.Send(ctx, []byte("kept"), 1, 4)
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		b := make([]byte, 4)
		if _, err := c.Recv(ctx, b, 0, 4); err != nil || string(b) != "kept" {
			return fmt.Errorf("receive after a withdrawn Ssend: %q %v", b, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
