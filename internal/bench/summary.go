package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/collcall"
	"github.com/commtune/commtune/internal/stats"
)

// Timing is how a benchmark times its calls.
type Timing string

const (
	// BackToBack runs, per size (and algorithm), WarmupCalls untimed
	// calls, one barrier, then the timed calls one after another with
	// nothing between them, as an application calls: a call that leaves
	// one rank late, or a progress thread behind, charges the next call,
	// and the mean shows it. The default.
	BackToBack Timing = "back-to-back"
	// BarrierEach puts a barrier before every timed call, so that each
	// starts with all ranks together and none pays for the last: the
	// call's own cost, without what calls do to their neighbours.
	BarrierEach Timing = "barrier"
)

// Timings are the timings a benchmark takes, the default first.
var Timings = []Timing{BackToBack, BarrierEach}

// ParseTiming returns the timing named s; "" is BackToBack.
func ParseTiming(s string) (Timing, error) {
	switch Timing(s) {
	case "", BackToBack:
		return BackToBack, nil
	case BarrierEach:
		return BarrierEach, nil
	}
	return "", fmt.Errorf("timing %q: want %s or %s", s, BackToBack, BarrierEach)
}

// WarmupCalls is how many untimed calls a back-to-back run makes before
// its barrier: connections, buffers, pools and the spin budget settle.
const WarmupCalls = 20

// WarmupTime is the least time a back-to-back collective run spends in
// untimed calls, WarmupCalls at a time, before its barrier; the reference
// MPI benchmark does the same. A Go process that was idle wakes the
// runtime's monitor thread (sysmon) every 20 µs for its first ~5 ms of
// work, then every 10 ms; each wake-up preempts the rank's thread on its
// processor, measured at ~30 µs on a 2-vCPU virtual machine — a third of
// the processor during those 5 ms. Past it, a run measures the steady
// state, which an application pays between idle periods.
const WarmupTime = 10 * time.Millisecond

// warmUp makes untimed calls, WarmupCalls at a time, until rank 0 has
// spent WarmupTime in them; rank 0 broadcasts whether to go on, so that
// every rank makes the same calls.
func warmUp(ctx context.Context, c *commtune.Comm, call func() error) error {
	return collcall.For(ctx, c, WarmupTime, WarmupCalls, call)
}

// Summary is the distribution of a run's call times, in microseconds.
// The mean is what the run cost per call — the calls of a back-to-back
// run add up to its wall time — and the quantiles and the maximum say how
// the cost was spread: a mean well above the median is a tail.
type Summary struct {
	Calls int
	Mean  float64
	P50   float64
	P90   float64
	P99   float64
	Max   float64
}

// SummaryOf summarizes call times given in nanoseconds, leaving ns as it
// is; the quantiles follow stats.Quantiles. The summary of no times is
// zero.
func SummaryOf(ns []float64) Summary {
	if len(ns) == 0 {
		return Summary{}
	}
	q := stats.Quantiles(ns, 0.5, 0.9, 0.99, 1)
	return Summary{Calls: len(ns), Mean: stats.Mean(ns) / 1e3, P50: q[0] / 1e3, P90: q[1] / 1e3, P99: q[2] / 1e3, Max: q[3] / 1e3}
}

// slowestPerCall returns, on rank 0 of c, each call's time on the rank
// that took longest over it: the k-th element is the maximum over ranks of
// their k-th times (in nanoseconds). Every rank passes as many times;
// ranks other than 0 get nil. The reduction runs after the timed calls, so
// that it does not come between them.
func slowestPerCall(ctx context.Context, c *commtune.Comm, times []time.Duration) ([]float64, error) {
	ns := make([]float64, len(times))
	for i, d := range times {
		ns[i] = float64(d.Nanoseconds())
	}
	slowest := make([]float64, len(ns))
	if err := commtune.Reduce(ctx, c, ns, slowest, commtune.Max, 0); err != nil {
		return nil, err
	}
	if c.Rank() != 0 {
		return nil, nil
	}
	return slowest, nil
}
