package sample

import (
	"context"
	"fmt"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/stats"
	"github.com/commtune/commtune/internal/units"
)

// The node pass: an Alltoall of every rank of the node (profile.NodeOp),
// its messages through the rings against read in place, as programs call
// it — back to back, each block's figure the mean call on its slowest
// rank. Seed 004 §4.2 found collectives gaining from single copy from
// 4 KiB where a ping-pong gains from 64 KiB; here the crossing moved with
// the ranks per processor, so a pass runs on each side of
// oversubscription (cmd/commtune).

// NodeSizes are the blocks per rank the node pass times: powers of two
// from 1 KiB to 1 MiB (a quick pass: powers of four).
func NodeSizes(quick bool) []int64 {
	var out []int64
	for s := int64(1 << 10); s <= 1<<20; s <<= 1 {
		if !quick || s&0x5555555555555555 != 0 {
			out = append(out, s)
		}
	}
	return out
}

// nodeBlocks is how many blocks time each path and size (quick: 3).
func nodeBlocks(quick bool) int {
	if quick {
		return 3
	}
	return 5
}

// nodeCallBytes is about what the calls of one block move per rank: a
// block of small calls runs many, of large ones at least nodeMinCalls.
const (
	nodeCallBytes = 8 << 20
	nodeMinCalls  = 4
	nodeMaxCalls  = 200
	nodeWarmup    = 3
)

// nodePaths are the ways the pass moves the Alltoall's messages, by the
// algorithm that does.
var nodePaths = []struct{ path, algo string }{
	{profile.NodeRing, profile.NodeOp},
	{profile.NodePull, profile.NodeOp + "/pull"},
}

// NodeUnits is the steps NodeRun reports to Progress.
func NodeUnits(quick bool) int { return len(NodeSizes(quick)) }

// NodeRun is the node pass every rank of c (all the ranks of one node)
// calls. It returns on rank 0 the curves by path (profile.NodeRing,
// profile.NodePull); nil elsewhere.
func NodeRun(ctx context.Context, c *commtune.Comm, quick bool, progress Progress) (map[string]profile.Curve, error) {
	n := c.Size()
	sizes := NodeSizes(quick)
	blocks := nodeBlocks(quick)
	out := map[string]profile.Curve{}
	for si, size := range sizes {
		send := make([]byte, int(size)*n)
		recv := make([]byte, int(size)*n)
		for i := range send {
			send[i] = byte(i + c.Rank())
		}
		calls := min(max(nodeCallBytes/(int(size)*n), nodeMinCalls), nodeMaxCalls)
		figures := make([][]time.Duration, len(nodePaths))
		for b := range blocks {
			for k := range nodePaths {
				i := (k + b) % len(nodePaths) // alternate which path goes first
				d, err := nodeBlock(ctx, c, send, recv, nodePaths[i].algo, calls)
				if err != nil {
					return nil, fmt.Errorf("%s at %s: %w", nodePaths[i].algo, units.FormatSize(size), err)
				}
				figures[i] = append(figures[i], d)
			}
		}
		for i, p := range nodePaths {
			out[p.path] = append(out[p.path], nodeSample(size, figures[i]))
		}
		if progress != nil && c.Rank() == 0 {
			progress(si+1, len(sizes), fmt.Sprintf("alltoall of %d ranks, %s", n, units.FormatSize(size)))
		}
	}
	if c.Rank() != 0 {
		return nil, nil
	}
	return out, nil
}

// nodeBlock runs calls Alltoalls of algo back to back after a few
// unrecorded ones and a barrier, and returns the mean call on the slowest
// rank.
func nodeBlock(ctx context.Context, c *commtune.Comm, send, recv []byte, algo string, calls int) (time.Duration, error) {
	opt := commtune.WithAlgorithm(algo)
	for range nodeWarmup {
		if err := commtune.Alltoall(ctx, c, send, recv, opt); err != nil {
			return 0, err
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return 0, err
	}
	t0 := time.Now()
	for range calls {
		if err := commtune.Alltoall(ctx, c, send, recv, opt); err != nil {
			return 0, err
		}
	}
	mean := []float64{float64(time.Since(t0)) / float64(calls)}
	if err := commtune.Allreduce(ctx, c, mean, mean, commtune.Max); err != nil {
		return 0, err
	}
	return time.Duration(mean[0]), nil
}

// nodeSample is a curve's point from the blocks' figures: their median
// and quartiles.
func nodeSample(size int64, figures []time.Duration) profile.Sample {
	q := stats.Quantiles(figures, 0.25, 0.5, 0.75)
	return profile.Sample{Size: size, P25: max(q[0], 1), Median: max(q[1], 1), P75: max(q[2], 1), Reps: len(figures)}
}
