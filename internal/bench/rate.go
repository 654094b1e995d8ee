package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/sched"
	"github.com/commtune/commtune/internal/stats"
)

// RateConfig says what `commtune bench rate` measures.
type RateConfig struct {
	Sizes  []int         // message sizes
	Window int           // messages in flight per iteration (0: 64)
	Rounds int           // interleaved rounds: each figure is the median over them (0: 1)
	Time   time.Duration // about how long one timed run of a point lasts (0: 200 ms)
	Max    int           // sched.Aggregate's Max for the aggregate mode (0: 64 KiB)
}

// RateRow is one message size under both modes.
type RateRow struct {
	Bytes               int     `json:"bytes"`
	DefaultMsgsPerSec   float64 `json:"default_msgs_per_sec"`   // median over rounds
	AggregateMsgsPerSec float64 `json:"aggregate_msgs_per_sec"` // median over rounds
	Ratio               float64 `json:"ratio"`                  // aggregate / default
	// DefaultPerFrame and AggregatePerFrame are the messages rank 0 put
	// in one frame on average over the timed runs: above 1 only where
	// packets queued behind a busy rail and were aggregated.
	DefaultPerFrame   float64 `json:"default_per_frame"`
	AggregatePerFrame float64 `json:"aggregate_per_frame"`
}

// RateReport is what bench rate prints.
type RateReport struct {
	Bench     string    `json:"bench"`     // "rate"
	Transport string    `json:"transport"` // what reaches rank 1 from rank 0
	Window    int       `json:"window"`
	Rounds    int       `json:"rounds"`
	Max       int       `json:"aggregate_max"` // the aggregate mode's frame bound, bytes
	Rows      []RateRow `json:"rows"`
}

// Rate defaults.
const (
	DefaultRateWindow = 64
	DefaultRateTime   = 200 * time.Millisecond
	DefaultRateMax    = 64 << 10
)

// Tags of bench rate. Every data message of a window carries the same
// tag, so MPI's non-overtaking rule makes the i-th receive match the
// i-th send: the receiver's pattern check then also catches a reordering.
const (
	tagRateData  = 10
	tagRateAck   = 11
	tagRateCount = 12
)

// rateModes are the two strategies compared, in report order.
var rateModes = []string{"default", "aggregate"}

// Rate is a message-rate benchmark on ranks 0 and 1 of c, in the manner
// of osu_bw with small messages: per iteration rank 0 starts Window
// Isends of a size (not corked: a queue builds up by itself behind the
// busy rail, which is where aggregation can help) and waits for them all,
// rank 1 has pre-posted as many Irecvs, waits for them all and answers
// with one 8-byte ack. Rate is Window × iterations / elapsed on rank 0.
//
// Each size is measured under sched.Default and sched.Aggregate (set on
// both ranks, restored at the end); the iteration count of each (size,
// mode) is calibrated once, by rank 0, to last about cfg.Time. The modes
// take turns in each round, who goes first rotating, and each figure is
// the median over rounds. The first iteration of every run checks every
// message's bytes and length on rank 1. Rank 0 returns the report, rank 1
// nil.
func Rate(ctx context.Context, c *commtune.Comm, ep control.Endpoint, cfg RateConfig) (*RateReport, error) {
	if c.Size() != 2 {
		return nil, fmt.Errorf("bench rate needs exactly 2 ranks, have %d", c.Size())
	}
	if len(cfg.Sizes) == 0 {
		return nil, fmt.Errorf("bench rate: no sizes")
	}
	if slices.Min(cfg.Sizes) < 0 {
		return nil, fmt.Errorf("bench rate: negative size %d", slices.Min(cfg.Sizes))
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultRateWindow
	}
	if cfg.Time <= 0 {
		cfg.Time = DefaultRateTime
	}
	if cfg.Max <= 0 {
		cfg.Max = DefaultRateMax
	}
	rounds := max(cfg.Rounds, 1)
	defer ep.SetStrategy(nil)
	strategies := []sched.Strategy{sched.Default{}, sched.Aggregate{Max: cfg.Max}}

	r := newRateRun(c, cfg.Window, slices.Max(cfg.Sizes))
	// Calibrate each point once (this also warms connections and pools).
	iters := make([][]int, len(cfg.Sizes))
	for si, size := range cfg.Sizes {
		iters[si] = make([]int, len(strategies))
		for mi, st := range strategies {
			ep.SetStrategy(st)
			n, err := r.calibrate(ctx, size, cfg.Time)
			if err != nil {
				return nil, fmt.Errorf("%s at %d bytes: calibrating: %w", rateModes[mi], size, err)
			}
			iters[si][mi] = n
		}
	}
	elapsed := map[[2]int][]time.Duration{} // (size index, mode) → one per round
	frames := map[[2]int]int64{}            // Eager frames of the timed runs, likewise
	packets := map[[2]int]int64{}           // and the packets they carried
	for round := 0; round < rounds; round++ {
		for si, size := range cfg.Sizes {
			for j := range strategies {
				mi := (j + round + si) % len(strategies) // rotate who goes first
				ep.SetStrategy(strategies[mi])
				if _, err := r.run(ctx, size, 2); err != nil { // settle
					return nil, fmt.Errorf("%s at %d bytes: %w", rateModes[mi], size, err)
				}
				f0, p0 := ep.EagerFrames(1 - c.Rank())
				d, err := r.run(ctx, size, iters[si][mi])
				if err != nil {
					return nil, fmt.Errorf("%s at %d bytes: %w", rateModes[mi], size, err)
				}
				f1, p1 := ep.EagerFrames(1 - c.Rank())
				k := [2]int{si, mi}
				elapsed[k] = append(elapsed[k], d)
				frames[k] += f1 - f0
				packets[k] += p1 - p0
			}
		}
	}
	if c.Rank() != 0 {
		return nil, nil
	}
	rep := &RateReport{Bench: "rate", Transport: ep.Transport(1), Window: cfg.Window, Rounds: rounds, Max: cfg.Max}
	for si, size := range cfg.Sizes {
		rate := func(mi int) float64 {
			secs := stats.Median(elapsed[[2]int{si, mi}]) / 1e9
			return float64(cfg.Window) * float64(iters[si][mi]) / max(secs, 1e-9)
		}
		perFrame := func(mi int) float64 {
			k := [2]int{si, mi}
			if frames[k] == 0 {
				return 0
			}
			return float64(packets[k]) / float64(frames[k])
		}
		row := RateRow{Bytes: size, DefaultMsgsPerSec: rate(0), AggregateMsgsPerSec: rate(1),
			DefaultPerFrame: perFrame(0), AggregatePerFrame: perFrame(1)}
		if row.DefaultMsgsPerSec > 0 {
			row.Ratio = row.AggregateMsgsPerSec / row.DefaultMsgsPerSec
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

// rateRun holds one rank's buffers: one per message of a window (rank 0
// sends from them, filled once with ratePattern; rank 1 receives into
// them) and the requests.
type rateRun struct {
	c    *commtune.Comm
	me   int
	bufs [][]byte
	reqs []*commtune.Request
	ack  []byte
}

func newRateRun(c *commtune.Comm, window, maxSize int) *rateRun {
	r := &rateRun{c: c, me: c.Rank(), bufs: make([][]byte, window), reqs: make([]*commtune.Request, window), ack: make([]byte, 8)}
	for i := range r.bufs {
		r.bufs[i] = make([]byte, maxSize)
		if r.me == 0 {
			ratePattern(r.bufs[i], i)
		}
	}
	return r
}

// ratePattern fills b with the pattern of message i of a window: i's four
// low bytes, repeated, mixed with the offset. Every prefix of the pattern
// of i is the pattern of i at that size.
func ratePattern(b []byte, i int) {
	for j := range b {
		b[j] = byte(i>>(8*(j%4))) ^ byte(j*29+7)
	}
}

// checkRate returns an error unless b holds message i's pattern.
func checkRate(b []byte, i int) error {
	for j, v := range b {
		if want := byte(i>>(8*(j%4))) ^ byte(j*29+7); v != want {
			return fmt.Errorf("message %d of the window: byte %d is %#02x, want %#02x (corrupted or reordered)", i, j, v, want)
		}
	}
	return nil
}

// run does n iterations of size-byte windows and returns the time rank 0
// took (rank 1: its own). Rank 1 posts the next iteration's receives
// before it acknowledges the current one, so rank 0's messages always
// find them (but for the first iteration's), and checks every message of
// the first iteration.
func (r *rateRun) run(ctx context.Context, size, n int) (time.Duration, error) {
	c, w := r.c, len(r.bufs)
	if r.me == 0 {
		t0 := time.Now()
		for k := 0; k < n; k++ {
			for i := range w {
				q, err := c.Isend(r.bufs[i][:size], 1, tagRateData)
				if err != nil {
					return 0, err
				}
				r.reqs[i] = q
			}
			if _, err := commtune.WaitAll(ctx, r.reqs...); err != nil {
				return 0, err
			}
			if _, err := c.Recv(ctx, r.ack, 1, tagRateAck); err != nil {
				return 0, err
			}
		}
		return time.Since(t0), nil
	}
	post := func() error {
		for i := range w {
			q, err := c.Irecv(r.bufs[i][:size], 0, tagRateData)
			if err != nil {
				return err
			}
			r.reqs[i] = q
		}
		return nil
	}
	t0 := time.Now()
	for i := range r.bufs {
		clear(r.bufs[i][:size])
	}
	if err := post(); err != nil {
		return 0, err
	}
	for k := 0; k < n; k++ {
		sts, err := commtune.WaitAll(ctx, r.reqs...)
		if err != nil {
			return 0, err
		}
		if k == 0 {
			for i, st := range sts {
				if st.Count != size {
					return 0, fmt.Errorf("message %d of the window: %d bytes, want %d", i, st.Count, size)
				}
				if err := checkRate(r.bufs[i][:size], i); err != nil {
					return 0, err
				}
			}
		}
		if k+1 < n {
			if err := post(); err != nil {
				return 0, err
			}
		}
		if err := c.Send(ctx, r.ack, 0, tagRateAck); err != nil {
			return 0, err
		}
	}
	return time.Since(t0), nil
}

// calibrate returns the iteration count for runs of about target at size
// under the current strategy: both ranks run 1, 2, 4, ... iterations
// until rank 0 has timed one of at least target/8; after each run rank 0
// sends its verdict (0: go on; else the count), so that both agree.
func (r *rateRun) calibrate(ctx context.Context, size int, target time.Duration) (int, error) {
	const maxIters = 1 << 30
	var msg [8]byte
	for n := 1; ; n *= 2 {
		d, err := r.run(ctx, size, n)
		if err != nil {
			return 0, err
		}
		if r.me == 0 {
			var verdict int64
			if d >= target/8 || n >= maxIters/2 {
				verdict = int64(min(max(float64(n)*float64(target)/float64(max(d, 1)), 1), maxIters))
			}
			binary.LittleEndian.PutUint64(msg[:], uint64(verdict))
			if err := r.c.Send(ctx, msg[:], 1, tagRateCount); err != nil {
				return 0, err
			}
			if verdict > 0 {
				return int(verdict), nil
			}
			continue
		}
		st, err := r.c.Recv(ctx, msg[:], 0, tagRateCount)
		if err != nil {
			return 0, err
		}
		if st.Count != len(msg) {
			return 0, fmt.Errorf("iteration count: %d bytes, want %d", st.Count, len(msg))
		}
		if v := int64(binary.LittleEndian.Uint64(msg[:])); v > 0 {
			return int(v), nil
		}
	}
}
