// Package profiletest builds profiles with known thresholds for tests: each
// curve is a straight line, so where two cross can be worked out by hand.
package profiletest

import "github.com/commtune/commtune/internal/profile"

// Sizes returns the powers of two from lo to hi and the midpoints between
// them (3·2^(k−1)), as a sampling pass uses.
func Sizes(lo, hi int64) []int64 {
	var out []int64
	for s := lo; s <= hi; s *= 2 {
		out = append(out, s)
		if mid := s + s/2; s > 1 && mid < 2*s && mid <= hi {
			out = append(out, mid)
		}
	}
	return out
}

// Line samples a + b·size (ns) at sizes, with quartiles 1% either side
// and 100 repetitions.
func Line(sizes []int64, a, b float64) profile.Curve {
	c := make(profile.Curve, len(sizes))
	for i, s := range sizes {
		m := a + b*float64(s)
		c[i] = profile.Sample{Size: s, Median: m, P25: 0.99 * m, P75: 1.01 * m, Reps: 100}
	}
	return c
}

// Known returns a profile of platform fp whose choices are:
//
//	tcp: iovec from 1000 B (5000 + x/2 meets 5200 + 0.3x), eager up to
//	     195999 B (5200 + 0.3x meets 15000 + x/4 at 196000), aggregation
//	     below 30000 B (6000 + 1.1x meets 9000 + x);
//	shm: iovec from 1 B (always 100 ns faster), eager up to 101999 B
//	     (300 + x/20 meets 2000 + x/30 at 102000), then copy, and
//	     cachefree from 1200000 B (12000 + x/40 meets 2000 + x/30); cma
//	     (8000 + x/32) is never the fastest.
func Known(fp profile.Fingerprint) *profile.Profile {
	eager := Sizes(1, 512<<10)
	all := Sizes(1, 16<<20)
	pairs := Sizes(1, 256<<10)
	return &profile.Profile{Version: profile.Version, Fingerprint: fp, Seconds: 12.5,
		Transports: map[string]*profile.Transport{
			"tcp": {MaxEager: 512 << 10, Methods: map[string]profile.Curve{
				profile.EagerCopy:  Line(eager, 5000, 0.5),
				profile.EagerIovec: Line(eager, 5200, 0.3),
				profile.Rendezvous: Line(all, 15000, 0.25),
				profile.Aggregated: Line(pairs, 6000, 1.1),
				profile.TwoPackets: Line(pairs, 9000, 1.0),
			}},
			"shm": {MaxEager: 512 << 10, Methods: map[string]profile.Curve{
				profile.EagerCopy:                  Line(eager, 400, 0.05),
				profile.EagerIovec:                 Line(eager, 300, 0.05),
				profile.RendezvousVia("copy"):      Line(all, 2000, 1.0/30),
				profile.RendezvousVia("cma"):       Line(all, 8000, 1.0/32),
				profile.RendezvousVia("cachefree"): Line(all, 12000, 1.0/40),
			}},
		}}
}
