package demo

import (
	"math"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/profile"
)

func TestPredict(t *testing.T) {
	line := func(sizes []int64, a, b float64) profile.Curve {
		var c profile.Curve
		for _, s := range sizes {
			m := a + b*float64(s)
			c = append(c, profile.Sample{Size: s, Median: m, P25: m, P75: m, Reps: 1})
		}
		return c
	}
	sizes := []int64{1 << 10, 1 << 20, 16 << 20}
	p := &profile.Profile{
		Transports: map[string]*profile.Transport{
			"shm": {
				Methods: map[string]profile.Curve{profile.RendezvousVia("copy"): line(sizes, 1000, 0.1)},
				Collectives: map[string]map[string]profile.Curve{profile.Collective: {
					profile.RendezvousVia("copy"): line(sizes, 5000, 0.5),
				}},
			},
			"tcp": {Methods: map[string]profile.Curve{profile.Rendezvous: line(sizes, 20000, 1)}},
		},
		Host: map[string]profile.Curve{profile.Memcpy: line(sizes, 0, 0.05)},
	}
	tests := []struct {
		name      string
		transport string
		ranks     int
		r         Result
		want      float64 // ns; NaN: no prediction
	}{
		{"ping-pong: the curve of its path", "shm", 2, Result{Op: "pingpong", Bytes: 4 << 20, Path: profile.RendezvousVia("copy")}, 1000 + 0.1*(4<<20)},
		{"tcp's own rendezvous", "tcp", 2, Result{Op: "pingpong", Bytes: 1 << 20, Path: profile.Rendezvous}, 20000 + 1<<20},
		{"allreduce on two ranks: its own curve", "shm", 2, Result{Op: "allreduce", Bytes: 4 << 20, Path: profile.RendezvousVia("copy")}, 5000 + 0.5*(4<<20)},
		// Four ranks: copy(4M) + 3 × (T2(2M) − copy(2M)).
		{"allreduce on four ranks: scaled from two", "shm", 4, Result{Op: "allreduce", Bytes: 4 << 20, Path: profile.RendezvousVia("copy")},
			0.05*(4<<20) + 3*(5000+0.5*(2<<20)-0.05*(2<<20))},
		{"no curve for the path", "shm", 2, Result{Op: "pingpong", Bytes: 100, Path: profile.EagerIovec}, math.NaN()},
		{"no collective curve for the path", "shm", 2, Result{Op: "allreduce", Bytes: 100, Path: profile.EagerIovec}, math.NaN()},
		{"an unknown operation", "shm", 2, Result{Op: "bcast", Bytes: 100, Path: profile.RendezvousVia("copy")}, math.NaN()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Predict(p, tc.transport, tc.ranks, tc.r)
			switch {
			case math.IsNaN(tc.want) && ok:
				t.Errorf("predicted %v, want no prediction", got)
			case !math.IsNaN(tc.want) && (!ok || got != time.Duration(math.Round(tc.want))):
				t.Errorf("predicted %v (%v), want %v", got, ok, time.Duration(math.Round(tc.want)))
			}
		})
	}
}

func TestMiss(t *testing.T) {
	for _, tc := range []struct {
		predicted time.Duration
		measured  float64
		want      float64
	}{{125, 100, 0.25}, {75, 100, 0.25}, {100, 100, 0}, {1, 0, math.Inf(1)}} {
		if got := Miss(tc.predicted, tc.measured); math.Abs(got-tc.want) > 1e-12 && !(math.IsInf(got, 1) && math.IsInf(tc.want, 1)) {
			t.Errorf("Miss(%v, %v) = %v, want %v", tc.predicted, tc.measured, got, tc.want)
		}
	}
}
