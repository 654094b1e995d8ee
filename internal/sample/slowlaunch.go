package sample

import (
	"context"
	"math"
	"time"

	"github.com/commtune/commtune"
)

// Some launches on this machine's kind of host (a nested virtual machine)
// copy through shared memory 5–8 times slower than others for their whole
// life, while a copy within one process runs as usual: a 1 MiB ring
// allreduce of two ranks took 750–800 µs in 4 launches of 150 and 95 µs in
// the others. A pass run in such a launch ranks algorithms by how they
// suffer from it, not by what programs will see, so a node pass checks
// its launch first (and last) and is run again in a new one.

// SlowLaunchRatio is how many times a private copy of the same size a
// one-way 1 MiB message between two ranks may take before the launch is
// called slow: 0.4–1.6 in 40 launches here (the copy is timed cold), and
// 5–8 times that in a slow one.
const SlowLaunchRatio = 4

const (
	launchProbeSize  = 1 << 20
	launchProbeTrips = 20
	launchProbeWarm  = 5
)

// LaunchRatio returns, on every rank of c, how many times the quickest of
// some private copies of 1 MiB the quickest of some one-way 1 MiB
// messages between ranks 0 and 1 took (the other ranks wait at a
// barrier): the figure SlowLaunchRatio judges.
func LaunchRatio(ctx context.Context, c *commtune.Comm) (float64, error) {
	buf, other := make([]byte, launchProbeSize), make([]byte, launchProbeSize)
	for i := range buf {
		buf[i] = byte(i)
	}
	copy(other, buf)
	// The quickest of each: a slow launch slows every trip, where other
	// work on the machine delays some.
	copyNS := math.Inf(1)
	for range launchProbeTrips {
		t0 := time.Now()
		copy(other, buf)
		copyNS = min(copyNS, float64(time.Since(t0)))
	}
	var oneWay float64
	if c.Rank() < 2 {
		peer := 1 - c.Rank()
		trip := func() error {
			if c.Rank() == 0 {
				if err := c.Send(ctx, buf, peer, 0); err != nil {
					return err
				}
				_, err := c.Recv(ctx, buf, peer, 0)
				return err
			}
			if _, err := c.Recv(ctx, buf, peer, 0); err != nil {
				return err
			}
			return c.Send(ctx, buf, peer, 0)
		}
		for range launchProbeWarm {
			if err := trip(); err != nil {
				return 0, err
			}
		}
		oneWay = math.Inf(1)
		for range launchProbeTrips {
			t0 := time.Now()
			if err := trip(); err != nil {
				return 0, err
			}
			oneWay = min(oneWay, float64(time.Since(t0))/2)
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return 0, err
	}
	ratio := []float64{oneWay / max(copyNS, 1)}
	if err := commtune.Bcast(ctx, c, ratio, 0); err != nil {
		return 0, err
	}
	return ratio[0], nil
}
