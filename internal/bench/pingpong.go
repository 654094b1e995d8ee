// Package bench holds commtune's benchmarks as functions every rank runs
// (ping-pong now; collectives and sweeps later) and their report formats:
// an osu-like table for people and one JSON object for machines.
package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/core"
)

// Result is one message size's measurement: the distribution over round
// trips of half a round trip, as rank 0 timed it.
type Result struct {
	Bytes         int     `json:"bytes"`
	LatencyUS     float64 `json:"latency_us"`      // median half round trip
	BandwidthMBps float64 `json:"bandwidth_MBps"`  // bytes / latency_us
	MeanUS        float64 `json:"latency_mean_us"` // mean half round trip: the tail shows here
	P90US         float64 `json:"latency_p90_us"`  // 90th percentile half round trip
	P99US         float64 `json:"latency_p99_us"`  // 99th percentile half round trip
	MaxUS         float64 `json:"latency_max_us"`  // the longest half round trip
	RoundTrips    int     `json:"round_trips"`     // how many were timed
	// Path is how rank 0's messages of this size travel to rank 1 under
	// its policy, in the profile's curve names (core.Policy.Path).
	Path string `json:"path,omitempty"`
}

// Summary returns r's times as a Summary.
func (r Result) Summary() Summary {
	return Summary{Calls: r.RoundTrips, Mean: r.MeanUS, P50: r.LatencyUS, P90: r.P90US, P99: r.P99US, Max: r.MaxUS}
}

// MeanMBps is the bandwidth at the mean half round trip: bytes / mean.
func (r Result) MeanMBps() float64 { return mbps(r.Bytes, r.MeanUS) }

// Report is the JSON document `commtune bench pingpong --json` prints.
type Report struct {
	Bench     string     `json:"bench"`
	Transport string     `json:"transport"`
	Method    string     `json:"method"`
	Ranks     int        `json:"ranks"`
	Timing    Timing     `json:"timing"` // BackToBack: PingPong's only timing
	Results   []Result   `json:"results"`
	Baselines []Baseline `json:"baselines,omitempty"`
}

// Baseline is a measurement without commtune taken in the same run,
// interleaved with commtune's.
type Baseline struct {
	Name    string   `json:"name"`
	Results []Result `json:"results"`
}

// Baselines PingPongConfig.Baseline names.
const (
	BaselineRawTCP = "raw-tcp" // a plain TCP ping-pong between the same two processes
	BaselineCopy   = "copy"    // a plain copy() of the message in rank 0, hot and cold
)

// PingPongConfig says what to measure.
type PingPongConfig struct {
	Sizes    []int
	Iters    int    // iterations for small sizes; large sizes use fewer
	Baseline string // "", BaselineRawTCP or BaselineCopy
}

// Iterations returns how many round trips to time at size: iters for small
// messages, fewer as messages grow (at least 20), so each size moves about
// the same data — as NewMadeleine's sampler does.
func Iterations(size, iters int) int {
	const budget = 256 << 20 // bytes per direction per size
	n := iters
	if size > 0 && budget/size < n {
		n = budget / size
	}
	return max(n, 20)
}

// blocks is how many alternating commtune/baseline blocks each size is
// split into when there is a baseline, so that machine noise hits both
// alike.
const blocks = 5

// PingPong runs on ranks 0 and 1 of c (others wait); rank 0 returns the
// results and the baselines'. Per size, after WarmupCalls untimed round
// trips and a barrier of the two ranks, it times Iterations(size,
// cfg.Iters) round trips back to back, each from the end of the one
// before to its own, on rank 0 (a round trip holds both ranks).
//
// With BaselineRawTCP ranks 0 and 1 also open a plain TCP connection and
// alternate blocks of both ping-pongs; with BaselineCopy rank 0 alternates
// blocks of plain copies of the message, between two buffers (hot, as a
// ping-pong reuses its buffers) and through buffers twice the size of the
// last-level cache (cold). Each block runs back to back.
func PingPong(ctx context.Context, c *commtune.Comm, ep control.Endpoint, cfg PingPongConfig) ([]Result, []Baseline, error) {
	me := c.Rank()
	if me > 1 {
		return nil, nil, nil
	}
	if c.Size() < 2 {
		return nil, nil, fmt.Errorf("ping-pong needs 2 ranks, have %d", c.Size())
	}
	var raw net.Conn
	if cfg.Baseline == BaselineRawTCP {
		conn, err := rawConnect(ctx, c)
		if err != nil {
			return nil, nil, fmt.Errorf("baseline connection: %w", err)
		}
		defer conn.Close()
		raw = conn
	}
	maxSize := slices.Max(cfg.Sizes)
	buf := make([]byte, maxSize)
	for i := range buf {
		buf[i] = byte(i)
	}
	// Warm up before the first size too: connections, pools, the spin
	// budget and the scheduler settle in the first few hundred round trips.
	if _, err := commtunePingPong(ctx, c, buf[:min(len(buf), 8)], 500, nil); err != nil {
		return nil, nil, err
	}
	var cp *copier
	if cfg.Baseline == BaselineCopy && me == 0 {
		cp = newCopier(maxSize)
	}
	nblocks := 1
	if cfg.Baseline != "" {
		nblocks = blocks
	}
	var res, base, hot, cold []Result
	for _, size := range cfg.Sizes {
		iters := Iterations(size, cfg.Iters)
		b := buf[:size]
		// Warm up both paths (connections, buffers, pools).
		if _, err := commtunePingPong(ctx, c, b, WarmupCalls, nil); err != nil {
			return nil, nil, err
		}
		if raw != nil {
			if _, err := rawPingPong(raw, me, b, WarmupCalls, nil); err != nil {
				return nil, nil, err
			}
		}
		if err := pairBarrier(ctx, c); err != nil {
			return nil, nil, err
		}
		per := max(iters/nblocks, 1)
		// Room for every round trip: growing a slice between two timed
		// round trips would count in the second.
		samples := make([]time.Duration, 0, per*nblocks)
		var rawSamples, hotSamples, coldSamples []time.Duration
		if raw != nil {
			rawSamples = make([]time.Duration, 0, per*nblocks)
		}
		// While rank 0 runs a baseline block, rank 1 waits long enough to
		// park; a few unrecorded round trips before each block let both
		// ranks settle back into a ping-pong, so the table does not charge
		// commtune for the interleaving (measured here: 8 B 0.34 µs alone,
		// 0.46–0.64 µs right after copy blocks).
		settle := max(per/10, 1)
		for k := 0; k < nblocks; k++ {
			var err error
			if k > 0 { // both ranks decide alike
				if _, err = commtunePingPong(ctx, c, b, settle, nil); err != nil {
					return nil, nil, err
				}
			}
			if samples, err = commtunePingPong(ctx, c, b, per, samples); err != nil {
				return nil, nil, err
			}
			if raw != nil {
				if _, err = rawPingPong(raw, me, b, settle, nil); err != nil {
					return nil, nil, err
				}
				if rawSamples, err = rawPingPong(raw, me, b, per, rawSamples); err != nil {
					return nil, nil, err
				}
			}
			if cp != nil {
				hotSamples = cp.hot(size, per, hotSamples)
				coldSamples = cp.cold(size, per, coldSamples)
			}
		}
		r := result(size, samples)
		if ep != nil {
			r.Path = ep.Policy(1).Path(int64(size), ep.Transport(1), core.Contiguous)
		}
		res = append(res, r)
		if raw != nil {
			base = append(base, result(size, rawSamples))
		}
		if cp != nil {
			// A copy is one transfer: the same as half a round trip.
			hot = append(hot, result(size, double(hotSamples)))
			cold = append(cold, result(size, double(coldSamples)))
		}
	}
	var bases []Baseline
	if raw != nil {
		bases = append(bases, Baseline{Name: BaselineRawTCP, Results: base})
	}
	if cp != nil {
		bases = append(bases, Baseline{Name: "copy-hot", Results: hot}, Baseline{Name: "copy-cold", Results: cold})
	}
	return res, bases, nil
}

const tagBarrier = 3

// pairBarrier is the barrier of ranks 0 and 1, which others of c do not
// enter: an empty message each way, rank 1 leaving once rank 0 has
// arrived and rank 0 once rank 1 has.
func pairBarrier(ctx context.Context, c *commtune.Comm) error {
	peer := 1 - c.Rank()
	if c.Rank() == 0 {
		if err := c.Send(ctx, nil, peer, tagBarrier); err != nil {
			return err
		}
		_, err := c.Recv(ctx, nil, peer, tagBarrier)
		return err
	}
	if _, err := c.Recv(ctx, nil, peer, tagBarrier); err != nil {
		return err
	}
	return c.Send(ctx, nil, peer, tagBarrier)
}

// double turns one-transfer times into the round-trip times result halves.
func double(ds []time.Duration) []time.Duration {
	for i := range ds {
		ds[i] *= 2
	}
	return ds
}

// result summarizes the round trips rtts of size-byte messages: each
// counts for half its time.
func result(size int, rtts []time.Duration) Result {
	half := make([]float64, len(rtts))
	for i, d := range rtts {
		half[i] = float64(d.Nanoseconds()) / 2
	}
	s := SummaryOf(half)
	return Result{Bytes: size, LatencyUS: s.P50, BandwidthMBps: mbps(size, s.P50), MeanUS: s.Mean,
		P90US: s.P90, P99US: s.P99, MaxUS: s.Max, RoundTrips: s.Calls}
}

const tagPingPong = 1

// commtunePingPong does n round trips of b between ranks 0 and 1 and
// appends each round trip's time (as seen by rank 0) to rtts: one clock
// reading between round trips, each timed from the end of the one before.
func commtunePingPong(ctx context.Context, c *commtune.Comm, b []byte, n int, rtts []time.Duration) ([]time.Duration, error) {
	peer := 1 - c.Rank()
	prev := time.Now()
	for i := 0; i < n; i++ {
		if c.Rank() == 0 {
			if err := c.Send(ctx, b, peer, tagPingPong); err != nil {
				return rtts, err
			}
			if _, err := c.Recv(ctx, b, peer, tagPingPong); err != nil {
				return rtts, err
			}
		} else {
			if _, err := c.Recv(ctx, b, peer, tagPingPong); err != nil {
				return rtts, err
			}
			if err := c.Send(ctx, b, peer, tagPingPong); err != nil {
				return rtts, err
			}
		}
		now := time.Now()
		rtts, prev = append(rtts, now.Sub(prev)), now
	}
	return rtts, nil
}

// rawPingPong is the baseline: the same exchange as plain writes and reads
// on a TCP connection, timed the same way.
func rawPingPong(conn net.Conn, me int, b []byte, n int, rtts []time.Duration) ([]time.Duration, error) {
	prev := time.Now()
	for i := 0; i < n; i++ {
		if me == 0 {
			if _, err := conn.Write(b); err != nil {
				return rtts, err
			}
			if _, err := io.ReadFull(conn, b); err != nil {
				return rtts, err
			}
		} else {
			if _, err := io.ReadFull(conn, b); err != nil {
				return rtts, err
			}
			if _, err := conn.Write(b); err != nil {
				return rtts, err
			}
		}
		now := time.Now()
		rtts, prev = append(rtts, now.Sub(prev)), now
	}
	return rtts, nil
}

// rawConnect opens a plain TCP connection between ranks 0 and 1 of c on
// loopback: rank 0 listens and sends its port through commtune.
func rawConnect(ctx context.Context, c *commtune.Comm) (net.Conn, error) {
	const tag = 2
	if c.Rank() == 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		if err := c.Send(ctx, []byte(port), 1, tag); err != nil {
			return nil, err
		}
		return ln.Accept()
	}
	b := make([]byte, 16)
	st, err := c.Recv(ctx, b, 0, tag)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", string(b[:st.Count])))
}
