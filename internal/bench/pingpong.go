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
	"github.com/commtune/commtune/internal/stats"
)

// Result is one message size's measurement.
type Result struct {
	Bytes         int     `json:"bytes"`
	LatencyUS     float64 `json:"latency_us"`      // median half round trip
	BandwidthMBps float64 `json:"bandwidth_MBps"`  // bytes / latency_us
	MeanUS        float64 `json:"latency_mean_us"` // mean half round trip: the tail shows here
	P99US         float64 `json:"latency_p99_us"`  // 99th percentile half round trip
	// Path is how rank 0's messages of this size travel to rank 1 under
	// its policy, in the profile's curve names (core.Policy.Path).
	Path string `json:"path,omitempty"`
}

// Report is the JSON document `commtune bench pingpong --json` prints.
type Report struct {
	Bench     string     `json:"bench"`
	Transport string     `json:"transport"`
	Method    string     `json:"method"`
	Ranks     int        `json:"ranks"`
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
// split into, so that machine noise hits both alike.
const blocks = 5

// PingPong runs on ranks 0 and 1 of c (others wait); rank 0 returns the
// results and the baselines'. With BaselineRawTCP ranks 0 and 1 also open a
// plain TCP connection and alternate blocks of both ping-pongs; with
// BaselineCopy rank 0 alternates blocks of plain copies of the message,
// between two buffers (hot, as a ping-pong reuses its buffers) and through
// buffers twice the size of the last-level cache (cold).
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
	var res, base, hot, cold []Result
	for _, size := range cfg.Sizes {
		iters := Iterations(size, cfg.Iters)
		b := buf[:size]
		// Warm up both paths (connections, buffers, pools).
		if _, err := commtunePingPong(ctx, c, b, max(iters/10, 2), nil); err != nil {
			return nil, nil, err
		}
		if raw != nil {
			if _, err := rawPingPong(raw, me, b, max(iters/10, 2), nil); err != nil {
				return nil, nil, err
			}
		}
		var samples, rawSamples, hotSamples, coldSamples []time.Duration
		per := max(iters/blocks, 1)
		// While rank 0 runs a baseline block, rank 1 waits long enough to
		// park; a few unrecorded round trips before each block let both
		// ranks settle back into a ping-pong, so the table does not charge
		// commtune for the interleaving (measured here: 8 B 0.34 µs alone,
		// 0.46–0.64 µs right after copy blocks).
		settle := max(per/10, 1)
		for k := 0; k < blocks; k++ {
			var err error
			if k > 0 && cfg.Baseline != "" { // both ranks decide alike
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

// double turns one-transfer times into the round-trip times result halves.
func double(ds []time.Duration) []time.Duration {
	for i := range ds {
		ds[i] *= 2
	}
	return ds
}

func result(size int, rtts []time.Duration) Result {
	half := func(ns float64) float64 { return ns / 2 / float64(time.Microsecond) }
	q := stats.Quantiles(rtts, 0.5, 0.99)
	lat := half(q[0])
	var sum time.Duration
	for _, d := range rtts {
		sum += d
	}
	r := Result{Bytes: size, LatencyUS: lat}
	if n := len(rtts); n > 0 {
		r.MeanUS = half(float64(sum / time.Duration(n)))
		r.P99US = half(q[1])
	}
	if lat > 0 {
		r.BandwidthMBps = float64(size) / lat
	}
	return r
}

const tagPingPong = 1

// commtunePingPong does n round trips of b between ranks 0 and 1 and
// appends each round trip's time (as seen by rank 0) to rtts.
func commtunePingPong(ctx context.Context, c *commtune.Comm, b []byte, n int, rtts []time.Duration) ([]time.Duration, error) {
	peer := 1 - c.Rank()
	for i := 0; i < n; i++ {
		t0 := time.Now()
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
		rtts = append(rtts, time.Since(t0))
	}
	return rtts, nil
}

// rawPingPong is the baseline: the same exchange as plain writes and reads
// on a TCP connection.
func rawPingPong(conn net.Conn, me int, b []byte, n int, rtts []time.Duration) ([]time.Duration, error) {
	for i := 0; i < n; i++ {
		t0 := time.Now()
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
		rtts = append(rtts, time.Since(t0))
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
