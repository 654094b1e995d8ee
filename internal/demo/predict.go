package demo

import (
	"math"
	"time"

	"github.com/commtune/commtune/internal/profile"
)

// Predict returns what profile p predicts for r, an operation Run measured
// on a job of ranks ranks over transport, and whether p can predict it.
//
// A ping-pong's one-way time is the curve of its path at its size (seed 000
// §III-A). An allreduce's is the profile's own allreduce curve over the path
// of its chunks (profile.Collective), timed between two ranks; for a ring of
// p ranks, each of whose p−1 reduce-scatter and p−1 allgather rounds moves a
// chunk of n/p, it is scaled from the two-rank time of a vector of 2n/p
// (whose one round each way moves the same chunk):
//
//	T_p(n) = copy(n) + (p−1)·(T_2(2n/p) − copy(2n/p))
//
// where copy is the plain copy() curve: the ring starts by copying the
// vector into the result.
func Predict(p *profile.Profile, transport string, ranks int, r Result) (time.Duration, bool) {
	path := r.Path
	switch r.Op {
	case "pingpong":
		d, err := p.Predict(transport, path, r.Bytes)
		return d, err == nil
	case "allreduce":
		if ranks < 2 {
			return 0, false
		}
		if ranks == 2 {
			d, err := p.PredictCollective(transport, profile.Collective, path, r.Bytes)
			return d, err == nil
		}
		mc := p.Host[profile.Memcpy]
		chunk2 := 2 * r.Bytes / int64(ranks)
		t2, err := p.PredictCollective(transport, profile.Collective, path, chunk2)
		if err != nil || len(mc) == 0 {
			return 0, false
		}
		ns := mc.At(float64(r.Bytes)) + float64(ranks-1)*(float64(t2)-mc.At(float64(chunk2)))
		return time.Duration(math.Round(max(ns, 0))), true
	}
	return 0, false
}

// Miss is how far a prediction is from what was measured, relative to the
// measurement: 0.25 when the prediction is 25% above or below it.
func Miss(predicted time.Duration, measuredNS float64) float64 {
	if measuredNS <= 0 {
		return math.Inf(1)
	}
	return math.Abs(float64(predicted.Nanoseconds())-measuredNS) / measuredNS
}
