package conformance

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/commtune/commtune"
)

// SurviveVictim is the rank Survive kills: neither the first nor, in a
// job of four or more, the last.
const SurviveVictim = 2

// surviveWait bounds how long a survivor waits to learn of the victim's
// loss: only a survivor that never learns waits that long.
const surviveWait = 2 * time.Minute

// Survive is the rank program of a job that goes on after losing a rank
// (commtune run --keep-going, or another launcher told not to end the
// job): once every rank is in, rank SurviveVictim kills itself with
// SIGKILL. Every other rank must see a receive from it fail with
// ErrPeerLost naming it ("rank R: lost rank V: err"), then passes a token
// around a ring of the ranks still alive, arg laps (100 when empty), each
// message checked ("rank R: survived L laps with N ranks"), and exits 0.
// Rank 0 first names the job ("rank 0: job ID") when COMMTUNE_JOB does.
func Survive(ctx context.Context, c *commtune.Comm, arg string) error {
	laps := 100
	if arg != "" {
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return fmt.Errorf("survive: %q is not a count of laps", arg)
		}
		laps = n
	}
	if c.Size() <= SurviveVictim {
		return fmt.Errorf("survive: needs more than %d ranks, has %d", SurviveVictim, c.Size())
	}
	if id := os.Getenv("COMMTUNE_JOB"); c.Rank() == 0 && id != "" {
		fmt.Printf("rank 0: job %s\n", id) // names its shared-memory files
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if c.Rank() == SurviveVictim {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Kill() // SIGKILL: no goodbye, no cleanup
		}
		select {}
	}
	wctx, cancel := context.WithTimeout(ctx, surviveWait)
	_, err := c.Recv(wctx, make([]byte, 8), SurviveVictim, 7)
	cancel()
	var pl *commtune.PeerLostError
	if !errors.As(err, &pl) || pl.Rank != SurviveVictim {
		return fmt.Errorf("receive from rank %d after its death: %v, want ErrPeerLost naming it", SurviveVictim, err)
	}
	fmt.Printf("rank %d: lost rank %d: %v\n", c.Rank(), pl.Rank, err)

	var alive []int
	me := -1
	for r := range c.Size() {
		if r == SurviveVictim {
			continue
		}
		if r == c.Rank() {
			me = len(alive)
		}
		alive = append(alive, r)
	}
	n := len(alive)
	next, prev := alive[(me+1)%n], alive[(me-1+n)%n]
	out, in := make([]byte, 16), make([]byte, 16)
	for lap := range laps {
		// The message names its sender and the lap: one from the wrong
		// rank, or a stale one, does not pass.
		binary.LittleEndian.PutUint64(out, uint64(c.Rank()))
		binary.LittleEndian.PutUint64(out[8:], uint64(lap))
		if _, err := c.Sendrecv(ctx, out, next, 8, in, prev, 8); err != nil {
			return fmt.Errorf("lap %d with the survivors: %w", lap, err)
		}
		if from, l := binary.LittleEndian.Uint64(in), binary.LittleEndian.Uint64(in[8:]); from != uint64(prev) || l != uint64(lap) {
			return fmt.Errorf("lap %d: got rank %d's lap %d, want rank %d's", lap, from, l, prev)
		}
	}
	fmt.Printf("rank %d: survived %d laps with %d ranks\n", c.Rank(), laps, n)
	return nil
}
