package conformance

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/commtune/commtune"
)

// StressConfig sizes a stress run.
type StressConfig struct {
	Messages int    // total messages across all ranks
	MaxSize  int    // largest payload; sizes are log-uniform in [1, MaxSize], 5% empty
	Tags     int    // tags drawn from [0, Tags)
	Seed     uint64 // every rank derives the same plan from it
}

// StressReport is what one rank saw.
type StressReport struct {
	Sent, Received int
	BytesReceived  int64
	Elapsed        time.Duration
}

type planned struct {
	dst, tag, size int
	idx            int // index among src→dst messages
}

// stressPlan returns, for each source, the messages it sends in order.
func stressPlan(n int, cfg StressConfig) [][]planned {
	plan := make([][]planned, n)
	for src := 0; src < n; src++ {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(src)))
		count := cfg.Messages / n
		if src < cfg.Messages%n {
			count++
		}
		next := make([]int, n)
		for i := 0; i < count; i++ {
			m := planned{dst: rng.IntN(n), tag: rng.IntN(cfg.Tags)}
			if rng.IntN(20) != 0 {
				m.size = int(math.Exp(rng.Float64() * math.Log(float64(cfg.MaxSize))))
			}
			m.idx = next[m.dst]
			next[m.dst]++
			plan[src] = append(plan[src], m)
		}
	}
	return plan
}

// FillPayload writes the bytes of src's idx-th message to dst: each
// receiver can recompute them, so every payload is checked in full.
func FillPayload(b []byte, src, dst, idx int) {
	x := uint64(src)<<48 ^ uint64(dst)<<32 ^ uint64(idx) ^ 0x9E3779B97F4A7C15
	var w [8]byte
	for i := 0; i < len(b); i += 8 {
		x += 0x9E3779B97F4A7C15
		z := x
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		binary.LittleEndian.PutUint64(w[:], z^(z>>31))
		copy(b[i:], w[:])
	}
}

// Stress runs on every rank of c: a sender goroutine sends the rank's
// planned messages in order while the receiver takes every message planned
// for it with a random mix of receive patterns — (source, tag), (source,
// any), (any, tag), (any, any) — and checks that each received message is
// exactly the one MPI's ordering rule says must match that pattern (the
// sender's earliest remaining message that fits), with its full payload.
// None may be lost, duplicated or reordered.
func Stress(ctx context.Context, c *commtune.Comm, cfg StressConfig) (StressReport, error) {
	if cfg.Tags <= 0 {
		cfg.Tags = 8
	}
	n, me := c.Size(), c.Rank()
	plan := stressPlan(n, cfg)
	start := time.Now()

	var wg sync.WaitGroup
	var sendErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, cfg.MaxSize)
		for _, m := range plan[me] {
			b := buf[:m.size]
			FillPayload(b, me, m.dst, m.idx)
			if err := c.Send(ctx, b, m.dst, m.tag); err != nil {
				sendErr = fmt.Errorf("send %d→%d #%d: %w", me, m.dst, m.idx, err)
				return
			}
		}
	}()

	// queues[src][tag] holds src's remaining messages to me with that tag,
	// in send order.
	queues := make([][][]planned, n)
	total := 0
	for src := 0; src < n; src++ {
		queues[src] = make([][]planned, cfg.Tags)
		for _, m := range plan[src] {
			if m.dst == me {
				queues[src][m.tag] = append(queues[src][m.tag], m)
				total++
			}
		}
	}
	earliest := func(src, tag int) (planned, bool) {
		if tag != commtune.AnyTag {
			q := queues[src][tag]
			if len(q) == 0 {
				return planned{}, false
			}
			return q[0], true
		}
		best, ok := planned{}, false
		for _, q := range queues[src] {
			if len(q) > 0 && (!ok || q[0].idx < best.idx) {
				best, ok = q[0], true
			}
		}
		return best, ok
	}
	rng := rand.New(rand.NewPCG(cfg.Seed^0xABCDEF, uint64(me)))
	buf := make([]byte, cfg.MaxSize)
	want := make([]byte, cfg.MaxSize)
	rep := StressReport{Sent: len(plan[me])}
	for got := 0; got < total; got++ {
		src, tag := commtune.AnySource, commtune.AnyTag
		// Pick a pattern some remaining message fits; use it only if such a
		// message is already here (Iprobe), so a specific receive never waits
		// behind a sender blocked on another rank.
		if k := rng.IntN(4); k > 0 {
			s := rng.IntN(n)
			if m, ok := earliest(s, commtune.AnyTag); ok {
				if k&1 == 1 {
					src = s
				}
				if k&2 == 2 {
					tag = m.tag
				}
				if _, ok, err := c.Iprobe(src, tag); err != nil {
					return rep, err
				} else if !ok {
					src, tag = commtune.AnySource, commtune.AnyTag
				}
			}
		}
		st, err := c.Recv(ctx, buf, src, tag)
		if err != nil {
			return rep, fmt.Errorf("receive %d of %d (pattern %d,%d): %w", got, total, src, tag, err)
		}
		matchTag := commtune.AnyTag
		if tag != commtune.AnyTag {
			matchTag = tag
		}
		m, ok := earliest(st.Source, matchTag)
		if !ok {
			return rep, fmt.Errorf("received an unplanned message %+v (pattern %d,%d): duplicate?", st, src, tag)
		}
		if m.tag != st.Tag || m.size != st.Count {
			return rep, fmt.Errorf("pattern (%d,%d) got tag %d, %d bytes from %d; ordering says message #%d (tag %d, %d bytes) comes first",
				src, tag, st.Tag, st.Count, st.Source, m.idx, m.tag, m.size)
		}
		FillPayload(want[:m.size], st.Source, me, m.idx)
		if !bytes.Equal(buf[:m.size], want[:m.size]) {
			return rep, fmt.Errorf("message #%d from %d (%d bytes): payload corrupted", m.idx, st.Source, m.size)
		}
		queues[st.Source][m.tag] = queues[st.Source][m.tag][1:]
		rep.Received++
		rep.BytesReceived += int64(m.size)
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	if sendErr != nil {
		return rep, sendErr
	}
	return rep, nil
}
