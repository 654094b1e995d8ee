// Command ring passes a token around all ranks of a job and reports the
// time per hop. Run it under the launcher:
//
//	go build -o /tmp/ring ./examples/ring
//	go run ./cmd/commtune run -n 4 --prefix -- /tmp/ring -laps 10000 -size 1K
//
// Without the launcher it runs as a single rank passing the token to itself.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/stats"
	"github.com/commtune/commtune/internal/units"
)

func main() {
	laps := flag.Int("laps", 1000, "times the token goes around the ring")
	sizeFlag := flag.String("size", "8", "token size (8, 1K, 1M …)")
	flag.Parse()
	size, err := units.ParseSize(*sizeFlag)
	if err != nil || *laps < 1 {
		fmt.Fprintf(os.Stderr, "ring: want -laps ≥ 1 and a size like 8 or 1K (%v)\n", err)
		os.Exit(2)
	}
	if err := run(*laps, int(size)); err != nil {
		fmt.Fprintln(os.Stderr, "ring:", err)
		os.Exit(1)
	}
}

func run(laps, size int) error {
	ctx := context.Background()
	c, err := commtune.Init(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	next, prev := (c.Rank()+1)%c.Size(), (c.Rank()+c.Size()-1)%c.Size()
	tok := make([]byte, size)
	start := time.Now()
	lapTimes := make([]time.Duration, 0, laps)
	for lap := 0; lap < laps; lap++ {
		// Rank 0 starts each lap; the others forward what they receive.
		if c.Rank() == 0 {
			t0 := time.Now()
			if err := c.Send(ctx, tok, next, lap); err != nil {
				return err
			}
			if _, err := c.Recv(ctx, tok, prev, lap); err != nil {
				return err
			}
			lapTimes = append(lapTimes, time.Since(t0))
			continue
		}
		if _, err := c.Recv(ctx, tok, prev, lap); err != nil {
			return err
		}
		if err := c.Send(ctx, tok, next, lap); err != nil {
			return err
		}
	}
	if c.Rank() == 0 {
		hops := laps * c.Size()
		q := stats.Quantiles(lapTimes, 0.5, 0.9, 0.99)
		perHop := func(ns float64) float64 { return ns / 1e3 / float64(c.Size()) }
		fmt.Printf("%d ranks, %d-byte token: %.2f µs per hop on average over %d hops; per hop by lap: median %.2f, p90 %.2f, p99 %.2f µs\n",
			c.Size(), size, float64(time.Since(start).Nanoseconds())/1e3/float64(hops), hops,
			perHop(q[0]), perHop(q[1]), perHop(q[2]))
	}
	return c.Close()
}
