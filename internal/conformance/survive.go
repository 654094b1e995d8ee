package conformance

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
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
// SIGKILL (with arg "exit", it exits with status 3 without closing
// anything, as a crash that is no signal does). Every other rank must see
// a receive from it fail with ErrPeerLost naming it ("rank R: lost rank
// V: err"), then passes a token around a ring of the ranks still alive
// (laps: a number in arg, 100 without), each message checked ("rank R:
// survived L laps in D with N ranks"), and exits 0. A duration in arg
// ("3s") makes the survivors go on for at least that long. Rank 0 first names the
// job ("rank 0: job ID") when COMMTUNE_JOB does.
func Survive(ctx context.Context, c *commtune.Comm, arg string) error {
	laps, exit, span := 100, false, time.Duration(0)
	for _, f := range strings.Fields(arg) {
		n, err := strconv.Atoi(f)
		d, derr := time.ParseDuration(f)
		switch {
		case f == "exit":
			exit = true
		case err == nil && n > 0:
			laps = n
		case derr == nil && d > 0:
			span = d
		default:
			return fmt.Errorf("survive: %q: want a count of laps, a duration and/or \"exit\"", arg)
		}
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
		if exit {
			os.Exit(3)
		}
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
	// A token goes around the ring of survivors, from the first: it
	// carries its lap, its sender and whether the first wants another lap
	// after it, so every survivor stops after the same one. Each rank
	// checks what it receives: a message from the wrong rank, or a stale
	// one, does not pass.
	token := make([]byte, 24)
	start := time.Now()
	for lap := 0; ; lap++ {
		if me == 0 {
			more := lap+1 < laps || time.Since(start) < span
			putToken(token, c.Rank(), lap, more)
			if err := c.Send(ctx, token, next, 8); err != nil {
				return fmt.Errorf("lap %d with the survivors: %w", lap, err)
			}
		}
		if _, err := c.Recv(ctx, token, prev, 8); err != nil {
			return fmt.Errorf("lap %d with the survivors: %w", lap, err)
		}
		from, l, more := binary.LittleEndian.Uint64(token), binary.LittleEndian.Uint64(token[8:]), token[16] == 1
		if from != uint64(prev) || l != uint64(lap) {
			return fmt.Errorf("lap %d: got rank %d's lap %d, want rank %d's", lap, from, l, prev)
		}
		if me != 0 {
			putToken(token, c.Rank(), lap, more)
			if err := c.Send(ctx, token, next, 8); err != nil {
				return fmt.Errorf("lap %d with the survivors: %w", lap, err)
			}
		}
		if !more {
			fmt.Printf("rank %d: survived %d laps in %v with %d ranks\n", c.Rank(), lap+1, time.Since(start).Round(time.Millisecond), n)
			return nil
		}
	}
}

// putToken writes a Survive token: sender, lap, and whether another lap
// follows.
func putToken(b []byte, sender, lap int, more bool) {
	binary.LittleEndian.PutUint64(b, uint64(sender))
	binary.LittleEndian.PutUint64(b[8:], uint64(lap))
	b[16] = 0
	if more {
		b[16] = 1
	}
}
