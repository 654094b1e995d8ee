package comm

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"

	"github.com/commtune/commtune/internal/observe"
	"github.com/commtune/commtune/internal/trace"
)

// tagClock is the collective context's tag of the clock alignment's
// messages (apart from those in internalcoll.go and segment.go).
const tagClock = 6

// clockRounds is how many round trips each rank makes to rank 0: the
// fastest gives the offset, and a few rule out a round delayed by the
// scheduler.
const clockRounds = 8

// alignClock measures this rank's clock (observe.Now) against rank 0's by
// Cristian's method: rank 0 answers each rank's pings in turn with its
// clock, and the ping with the shortest round trip gives the offset, with
// half that round trip as its error. A rank on rank 0's node reads the
// same clock (CLOCK_MONOTONIC is the system's): one ping tells it the
// origin, and its skew is 0 exactly. It returns skew, rank 0's clock less
// this rank's at one instant (0 for rank 0, near 0 for ranks that read
// one clock), origin, rank 0's clock when the alignment began (the job
// clock's 0), and the error bound. c must be the world.
func (c *Comm) alignClock(ctx context.Context) (skew, origin, errBound int64, err error) {
	n := len(c.group)
	if c.rank == 0 {
		start := observe.Now()
		var ping [8]byte
		reply := make([]byte, 16)
		for r := 1; r < n; r++ {
			for range c.clockRounds(c.group[r]) {
				q, err := c.irecv(ping[:], r, tagClock, c.collCtx)
				if err != nil {
					return 0, 0, 0, err
				}
				if _, err := q.Wait(ctx); err != nil {
					return 0, 0, 0, err
				}
				binary.LittleEndian.PutUint64(reply, uint64(observe.Now()))
				binary.LittleEndian.PutUint64(reply[8:], uint64(start))
				s, err := c.isend(reply, r, tagClock, c.collCtx)
				if err != nil {
					return 0, 0, 0, err
				}
				if _, err := s.Wait(ctx); err != nil {
					return 0, 0, 0, err
				}
			}
		}
		return 0, start, 0, nil
	}
	var ping [8]byte
	reply := make([]byte, 16)
	best := int64(-1)
	rounds := c.clockRounds(c.group[c.rank])
	for range rounds {
		q, err := c.irecv(reply, 0, tagClock, c.collCtx)
		if err != nil {
			return 0, 0, 0, err
		}
		t1 := observe.Now()
		s, err := c.isend(ping[:], 0, tagClock, c.collCtx)
		if err != nil {
			return 0, 0, 0, err
		}
		if _, err := s.Wait(ctx); err != nil {
			return 0, 0, 0, err
		}
		if _, err := q.Wait(ctx); err != nil {
			return 0, 0, 0, err
		}
		t2 := observe.Now()
		if rtt := t2 - t1; best < 0 || rtt < best {
			best = rtt
			t0 := int64(binary.LittleEndian.Uint64(reply))
			start := int64(binary.LittleEndian.Uint64(reply[8:]))
			// Rank 0 read t0 halfway through the round trip, at best.
			skew, origin = t0-(t1+t2)/2, start
		}
	}
	if rounds == 1 {
		return 0, origin, 0, nil
	}
	return skew, origin, best / 2, nil
}

// measureEveryClock makes every rank measure its skew, as on another
// node: for the test of the measurement, on one node where the truth is 0.
var measureEveryClock = false

// clockRounds is how many pings world rank w makes to rank 0: one on rank
// 0's node, which only needs the origin.
func (c *Comm) clockRounds(w int) int {
	if c.ep.NodeOf(w) == c.ep.NodeOf(c.group[0]) && !measureEveryClock {
		return 1
	}
	return clockRounds
}

// StartTrace starts this rank's timeline in dir (COMMTUNE_TRACE): the job's
// clocks aligned first, every rank of the world calling it at Init before
// any other call. c must be the world.
func (c *Comm) StartTrace(ctx context.Context, dir string) error {
	if !c.world {
		return fmt.Errorf("commtune: a timeline starts on the world communicator")
	}
	skew, origin, errBound, err := c.alignClock(ctx)
	if err != nil {
		return fmt.Errorf("commtune: %s: aligning the ranks' clocks: %w", "COMMTUNE_TRACE", err)
	}
	offset := skew - origin // Now()+offset is the job clock
	host, _ := os.Hostname()
	info := trace.RankInfo{
		Job: c.ep.JobID, Rank: c.rank, Size: len(c.group), Host: host, PID: os.Getpid(),
		ClockOffsetNs: skew, ClockErrorNs: errBound, StartNs: observe.Now() + offset,
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("commtune: COMMTUNE_TRACE: %w", err)
	}
	return c.ep.Obs.StartTrace(dir, info, offset)
}
