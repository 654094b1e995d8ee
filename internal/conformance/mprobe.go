package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/commtune/commtune"
)

// matchedProbe: every rank sends mprobeMessages messages, eager and
// rendezvous by turns, to every other rank, while 8 goroutines per rank
// take whatever arrives with Mprobe and receive it with Mrecv into a
// buffer of the probed size. Every message arrives intact, none twice,
// none lost; a Message received twice, or on another communicator,
// fails; RecvBytes receives one of unknown size.
func matchedProbe(ctx context.Context, world *commtune.Comm) error {
	// Wildcard probes on a communicator of their own: ranks that finish
	// first go on to the suite's next case.
	c, err := world.Dup()
	if err != nil {
		return err
	}
	defer c.Close()
	const receivers = 8
	n, me := c.Size(), c.Rank()
	size := func(src, i int) int {
		if i%2 == 0 {
			return 8 + (src*7+i)%100
		}
		return 100<<10 + src*64 + i
	}
	seed := func(src, dst, i int) uint32 { return uint32(src*1_000_003 + dst*10_007 + i) }
	var reqs []*commtune.Request
	for dst := 0; dst < n; dst++ {
		if dst == me {
			continue
		}
		for i := 0; i < mprobeMessages; i++ {
			// The tag carries the message's number: the receivers check
			// each against what its sender sent.
			r, err := c.Isend(pattern(make([]byte, size(me, i)), seed(me, dst, i)), dst, i)
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
	}
	want := (n - 1) * mprobeMessages
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	seen := make(map[[2]int]bool, want)
	var firstErr error
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		stop()
	}
	var wg sync.WaitGroup
	for g := 0; g < receivers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := c.Mprobe(rctx, commtune.AnySource, commtune.AnyTag)
				if errors.Is(err, context.Canceled) && rctx.Err() != nil {
					return
				}
				if err != nil {
					fail(fmt.Errorf("mprobe: %w", err))
					return
				}
				st := m.Status()
				buf := make([]byte, st.Count)
				if _, err := c.Mrecv(ctx, m, buf); err != nil {
					fail(fmt.Errorf("mrecv of %+v: %w", st, err))
					return
				}
				if st.Count != size(st.Source, st.Tag) {
					fail(fmt.Errorf("message %d from rank %d: %d bytes, want %d", st.Tag, st.Source, st.Count, size(st.Source, st.Tag)))
					return
				}
				if err := checkPattern(buf, seed(st.Source, me, st.Tag)); err != nil {
					fail(fmt.Errorf("message %d from rank %d: %w", st.Tag, st.Source, err))
					return
				}
				if _, err := c.Mrecv(ctx, m, buf); !errors.Is(err, commtune.ErrMessageReceived) {
					fail(fmt.Errorf("a second Mrecv of one message: %v", err))
					return
				}
				mu.Lock()
				k := [2]int{st.Source, st.Tag}
				dup := seen[k]
				seen[k] = true
				done := len(seen) == want
				mu.Unlock()
				if dup {
					fail(fmt.Errorf("message %d from rank %d received twice", st.Tag, st.Source))
					return
				}
				if done {
					stop()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if len(seen) != want {
		return fmt.Errorf("%d of %d messages received", len(seen), want)
	}
	if _, err := commtune.WaitAll(ctx, reqs...); err != nil {
		return err
	}
	// Not on c: a rank done here sends these while the others' receivers
	// still take whatever comes on c.
	return mprobeEdges(ctx, world)
}

// mprobeMessages is how many messages each rank sends each other rank.
const mprobeMessages = 16

// mprobeEdges: a Message cannot be received on another communicator, and
// RecvBytes receives a message of unknown size whole.
func mprobeEdges(ctx context.Context, c *commtune.Comm) error {
	d, err := c.Dup()
	if err != nil {
		return err
	}
	defer d.Close()
	const tag = 1 << 20
	if c.Rank() == 0 {
		if err := c.Send(ctx, pattern(make([]byte, 12345), 9), 1, tag); err != nil {
			return err
		}
		return c.Send(ctx, pattern(make([]byte, 300<<10), 10), 1, tag)
	}
	if c.Rank() != 1 {
		return nil
	}
	m, err := c.Mprobe(ctx, 0, tag)
	if err != nil {
		return err
	}
	if _, err := d.Mrecv(ctx, m, make([]byte, 12345)); err == nil {
		return errors.New("a message probed on one communicator received on another")
	}
	buf := make([]byte, 12345)
	if _, err := c.Mrecv(ctx, m, buf); err != nil {
		return err
	}
	if err := checkPattern(buf, 9); err != nil {
		return err
	}
	b, st, err := c.RecvBytes(ctx, 0, tag)
	if err != nil {
		return err
	}
	if len(b) != 300<<10 || st.Count != len(b) {
		return fmt.Errorf("RecvBytes: %d bytes, status %+v, want %d", len(b), st, 300<<10)
	}
	return checkPattern(b, 10)
}
