// Package demo is the parallel program `commtune demo` runs twice, on the
// tuned profile and on the defaults: ranks 0 and 1 ping-pong messages of
// sizes on both sides of the thresholds, then every rank takes part in
// allreduces (a sum of float64 vectors, ring algorithm) whose results are
// checked.
package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/stats"
)

// Result is one timed operation, as rank 0 measured it.
type Result struct {
	Op    string  `json:"op"`    // "pingpong" or "allreduce"
	Bytes int64   `json:"bytes"` // message or vector size
	NS    float64 `json:"ns"`    // median: one-way time (pingpong), whole operation (allreduce)
	// MeanNS and P99NS are the mean and 99th percentile of the same
	// times: what the repetitions cost on average, and their tail.
	MeanNS float64 `json:"mean_ns"`
	P99NS  float64 `json:"p99_ns"`
	Reps   int     `json:"reps"`
	// Path is how rank 0 sends each message of the operation (a ping, or
	// an allreduce's chunk): its eager variant or rendezvous method; for
	// TableOps, the algorithm.
	Path string `json:"path"`
	// Steps, for TableOps, is coll.StepsDigest of the algorithm: two
	// names with the same steps are one path.
	Steps string `json:"steps,omitempty"`
}

// Config is what the program measures.
type Config struct {
	PingPong  []int64 // message sizes
	Allreduce []int64 // vector sizes in bytes (multiples of 8)
	// Table is the vector sizes (bytes, multiples of 8) of the
	// collectives whose algorithm the decision table chooses (TableOps):
	// the sampled table under the profile, the fixed one on the defaults.
	Table []int64
}

// TableOps are the collectives the program runs as the decision table
// chooses, by the name its results give them.
var TableOps = []string{"bcast (table)", "allreduce (table)"}

const tagPing = 1

// reps returns the repetitions for a message of n bytes: enough for a
// steady median, within a few seconds for the whole program.
func reps(n int64) int {
	return min(max(int((16<<20)/max(n, 1)), 20), 300)
}

// Report is what a run of the program measured, on rank 0.
type Report struct {
	Results []Result `json:"results"`
	// Probe is the one-way time of StateProbe's message, the median of
	// three probes — at the start, between the ping-pongs and the
	// allreduces, and at the end — so that one probe caught in a hiccup of
	// a millisecond does not speak for the run: the state the machine was
	// in while the program ran.
	Probe float64 `json:"probe_ns"`
}

// Run runs the program on every rank of c (an even number of them) and
// returns rank 0's measurements.
func Run(ctx context.Context, c *commtune.Comm, ep control.Endpoint, cfg Config) (*Report, error) {
	if c.Size()%2 != 0 {
		return nil, fmt.Errorf("demo: needs an even number of ranks, not %d", c.Size())
	}
	rep := &Report{}
	var probes [3]float64
	var err error
	if probes[0], err = StateProbe(ctx, c, ep); err != nil {
		return nil, err
	}
	var out []Result
	// Ping-pong between ranks 0 and 1 while the others wait in a barrier:
	// with more ranks than processors (4 on this machine's 2) every wait
	// parks, and two pairs at once would time the scheduler's placement of
	// four processes more than the messages.
	peer := c.Rank() ^ 1
	for _, n := range cfg.PingPong {
		if c.Rank() > 1 {
			break
		}
		// Data, as a program sends: a buffer never written holds zeros,
		// and cache-bypassing copies of zeros measured 10% faster here
		// than of anything else.
		buf := make([]byte, n)
		for i := range buf {
			buf[i] = byte(i*7 + c.Rank())
		}
		if err := settlePingPong(ctx, c, buf, peer); err != nil {
			return nil, fmt.Errorf("ping-pong of %d bytes: %w", n, err)
		}
		r := reps(n)
		d, err := pingPongs(ctx, c, buf, peer, r)
		if err != nil {
			return nil, fmt.Errorf("ping-pong of %d bytes: %w", n, err)
		}
		out = append(out, timed("pingpong", n, d, sendPath(c, ep, peer, n)))
	}
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	if probes[1], err = StateProbe(ctx, c, ep); err != nil {
		return nil, err
	}
	for _, n := range cfg.Allreduce {
		// The result goes to a second vector. In place, every call
		// copies the vector into a fresh allocation first: its page
		// faults and the collections it triggers took most of the time
		// (a 256 KiB allreduce measured 80 µs to 1.3 ms from one run to
		// the next) and hid the paths the profile chose between.
		v, sum := make([]float64, n/8), make([]float64, n/8)
		if err := settleAllreduce(ctx, c, v, sum); err != nil {
			return nil, fmt.Errorf("allreduce of %d bytes: %w", n, err)
		}
		r := reps(n)
		d := make([]time.Duration, 0, r)
		for i := 0; i < r; i++ {
			for j := range v {
				v[j] = float64(c.Rank()*len(v) + j)
			}
			if err := c.Barrier(ctx); err != nil {
				return nil, err
			}
			t0 := time.Now()
			if err := commtune.Allreduce(ctx, c, v, sum, commtune.Sum, ringAllreduce); err != nil {
				return nil, fmt.Errorf("allreduce of %d bytes: %w", n, err)
			}
			d = append(d, time.Since(t0))
			if err := checkSum(sum, c.Size()); err != nil {
				return nil, fmt.Errorf("allreduce of %d bytes: %w", n, err)
			}
		}
		out = append(out, timed("allreduce", n, d, sendPath(c, ep, (c.Rank()+1)%c.Size(), n/int64(c.Size()))))
	}
	for _, op := range TableOps {
		for _, n := range cfg.Table {
			r, err := tableCalls(ctx, c, op, n)
			if err != nil {
				return nil, fmt.Errorf("%s of %d bytes: %w", op, n, err)
			}
			out = append(out, r)
		}
	}
	rep.Results = out
	if probes[2], err = StateProbe(ctx, c, ep); err != nil {
		return nil, err
	}
	rep.Probe = stats.Median(probes[:])
	return rep, nil
}

// tableCalls times op (one of TableOps) on a vector of n bytes, as the
// decision table chooses its algorithm, back to back as programs call
// collectives, each call timed from the end of the one before: its path is
// the algorithm that ran.
func tableCalls(ctx context.Context, c *commtune.Comm, op string, n int64) (Result, error) {
	v, sum := make([]float64, n/8), make([]float64, n/8)
	for j := range v {
		v[j] = float64(c.Rank() + j)
	}
	call := func(opts ...commtune.CollOption) error {
		if op == TableOps[0] {
			return commtune.Bcast(ctx, c, v, 0, opts...)
		}
		return commtune.Allreduce(ctx, c, v, sum, commtune.Sum, opts...)
	}
	var chosen commtune.CollChoice
	if err := call(commtune.WithChoice(&chosen)); err != nil {
		return Result{}, err
	}
	r := reps(n)
	// Settle as long as the timed calls will run: an idle Go process has
	// its runtime's monitor wake often for a few milliseconds.
	for range r {
		if err := call(); err != nil {
			return Result{}, err
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return Result{}, err
	}
	d := make([]time.Duration, r)
	prev := time.Now()
	for i := range d {
		if err := call(); err != nil {
			return Result{}, err
		}
		now := time.Now()
		d[i], prev = now.Sub(prev), now
	}
	res := timed(op, n, d, chosen.Algorithm)
	if a, err := coll.Parse(tableOperation(op), chosen.Algorithm); err == nil {
		res.Steps = coll.StepsDigest(a, c.Size(), int(n), true)
	}
	return res, nil
}

// tableOperation is the collective of one of TableOps.
func tableOperation(op string) coll.Operation {
	if op == TableOps[0] {
		return coll.OpBcast
	}
	return coll.OpAllreduce
}

// timed is the result of op on n bytes taking times d, sent as path.
func timed(op string, n int64, d []time.Duration, path string) Result {
	q := stats.Quantiles(d, 0.5, 0.99)
	return Result{Op: op, Bytes: n, NS: q[0], MeanNS: stats.Mean(d), P99NS: q[1], Reps: len(d), Path: path}
}

// settleTime is how long each operation runs, unrecorded, before it is
// timed: the steady state a program sending the same messages over and
// over sees, and what the sampling pass measures (it settles each method
// as long). The change of path from one operation to the next lingers for
// several hundred microseconds (background goroutines of the previous
// path still awake on two processors); two warm-up round trips of a small
// message covered a few microseconds of it.
const settleTime = time.Millisecond

// tagSettled marks the last unrecorded round trip of a ping-pong.
const tagSettled = 2

// settlePingPong runs round trips of buf between c's rank and peer (0 and
// 1) for settleTime as rank 0 counts it; rank 0 sends the last with
// tagSettled, so its peer knows where they end.
func settlePingPong(ctx context.Context, c *commtune.Comm, buf []byte, peer int) error {
	if c.Rank()%2 == 0 {
		t0 := time.Now()
		for {
			tag := tagPing
			if time.Since(t0) >= settleTime {
				tag = tagSettled
			}
			if err := c.Send(ctx, buf, peer, tag); err != nil {
				return err
			}
			if _, err := c.Recv(ctx, buf, peer, tag); err != nil {
				return err
			}
			if tag == tagSettled {
				return nil
			}
		}
	}
	for {
		st, err := c.Recv(ctx, buf, peer, commtune.AnyTag)
		if err != nil {
			return err
		}
		if err := c.Send(ctx, buf, peer, st.Tag); err != nil {
			return err
		}
		if st.Tag == tagSettled {
			return nil
		}
	}
}

// settleAllreduce runs allreduces of v into sum for settleTime as rank 0
// counts it. Rank 0 says whether to go on in the first element of its
// vector (the others add 0 there): every rank reads the decision in the
// sum, so all stop after the same call.
func settleAllreduce(ctx context.Context, c *commtune.Comm, v, sum []float64) error {
	if len(v) == 0 {
		return nil
	}
	t0 := time.Now()
	for {
		clear(v)
		if c.Rank() == 0 && time.Since(t0) < settleTime {
			v[0] = 1
		}
		if err := commtune.Allreduce(ctx, c, v, sum, commtune.Sum, ringAllreduce); err != nil {
			return err
		}
		if sum[0] == 0 {
			return nil
		}
	}
}

// ProbeSize and ProbePath are StateProbe's message: one that the
// profile's own curve covers, the same under every policy compared.
const (
	ProbeSize = 32 << 10
	ProbePath = profile.EagerIovec
)

// probeReps is how many round trips StateProbe times.
const probeReps = 200

// StateProbe times a ping-pong of ProbeSize bytes between ranks 0 and 1,
// sent as ProbePath whatever the job's policy (and restored after), and
// returns the median one-way time on rank 0 (0 elsewhere).
//
// It tells the state of the machine while the program ran. This host is
// shared: for seconds at a time every message between the two ranks takes
// 5–10 times as long (8 bytes 0.74 µs instead of 0.37, 1 MiB 445 µs
// instead of 36, with no other process here, and a plain copy inside one
// process as fast as ever), and the methods rank otherwise in that state
// (a cache-bypassing copy overtakes a cached one at 8 MiB). A profile
// sampled outside it does not describe it; the probe, held against the
// profile's own curve, says which rounds ran in the state it does.
func StateProbe(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (float64, error) {
	if c.Rank() > 1 {
		return 0, nil
	}
	peer := c.Rank() ^ 1
	wp := c.WorldRank(peer)
	saved := ep.Policy(wp)
	pol := saved
	pol.Rendezvous, pol.Iovec = max(pol.Rendezvous, ProbeSize), 0
	if err := ep.SetPolicy(wp, pol); err != nil {
		return 0, err
	}
	defer ep.SetPolicy(wp, saved)
	buf := make([]byte, ProbeSize)
	for i := range buf {
		buf[i] = byte(i)
	}
	if err := settlePingPong(ctx, c, buf, peer); err != nil {
		return 0, fmt.Errorf("state probe: %w", err)
	}
	d, err := pingPongs(ctx, c, buf, peer, probeReps)
	if err != nil {
		return 0, fmt.Errorf("state probe: %w", err)
	}
	if c.Rank() != 0 {
		return 0, nil
	}
	return stats.Median(d), nil
}

// pingPongs times n round trips of buf between c's rank and peer, the
// even rank of the two sending first, and returns their one-way times.
func pingPongs(ctx context.Context, c *commtune.Comm, buf []byte, peer, n int) ([]time.Duration, error) {
	d := make([]time.Duration, n)
	for i := range d {
		t0 := time.Now()
		var err error
		if c.Rank()%2 == 0 {
			if err = c.Send(ctx, buf, peer, tagPing); err == nil {
				_, err = c.Recv(ctx, buf, peer, tagPing)
			}
		} else {
			if _, err = c.Recv(ctx, buf, peer, tagPing); err == nil {
				err = c.Send(ctx, buf, peer, tagPing)
			}
		}
		if err != nil {
			return nil, err
		}
		d[i] = time.Since(t0) / 2
	}
	return d, nil
}

// checkSum verifies the sum of the ranks' vectors: element j is
// Σ_r (r·len + j) = len·size(size−1)/2 + size·j.
func checkSum(v []float64, size int) error {
	base := float64(len(v)) * float64(size*(size-1)/2)
	for j, x := range v {
		if want := base + float64(size*j); x != want {
			return fmt.Errorf("element %d is %v, want %v", j, x, want)
		}
	}
	return nil
}

// ringAllreduce is the demo's allreduce: a ring reduce-scatter then a ring
// allgather (each rank sends 2(p−1)/p of the vector in chunks of 1/p, the
// bandwidth-optimal schedule), so that the path reported is that of one
// chunk. It is the collective the sampling pass times (profile.Collective).
var ringAllreduce = commtune.WithAlgorithm(profile.Collective)

// sendPath names how c's rank sends n bytes to peer under its policy.
func sendPath(c *commtune.Comm, ep control.Endpoint, peer int, n int64) string {
	w := c.WorldRank(peer)
	return ep.Policy(w).Path(n, ep.Transport(w), core.Contiguous)
}
