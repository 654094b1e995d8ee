package bench

import (
	"context"
	"fmt"
	"slices"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/observe"
	"github.com/commtune/commtune/internal/stats"
)

// OverheadConfig is what `commtune bench overhead` measures: back-to-back
// Allreduces of Size bytes, Calls in all per mode, in Rounds rounds.
type OverheadConfig struct {
	Calls, Rounds, Size int
	// Trace says whether the job writes a timeline (COMMTUNE_TRACE set),
	// so that the trace mode can be measured.
	Trace bool
}

// OverheadReport is what the ranks' calls cost in each mode of
// observation, on rank 0.
type OverheadReport struct {
	Bench     string         `json:"bench"` // "overhead"
	Ranks     int            `json:"ranks"`
	Transport string         `json:"transport"`
	Size      int            `json:"size"`
	Calls     int            `json:"calls"` // per mode
	Rounds    int            `json:"rounds"`
	Modes     []OverheadMode `json:"modes"`
}

// OverheadMode is one mode's figures: per call, over every call of every
// round, and its cost against calls that record nothing, round by round
// (the modes take turns within a round, so that a round's drift of the
// machine's speed touches them alike).
type OverheadMode struct {
	Mode string  `json:"mode"` // "off", "counters", "trace"
	Mean float64 `json:"mean_ns"`
	P50  float64 `json:"p50_ns"`
	P99  float64 `json:"p99_ns"`
	// Ratio is the median over rounds of this mode's mean over the off
	// mode's mean in the same round; RatioLo and RatioHi the lowest and
	// highest.
	Ratio   float64 `json:"ratio"`
	RatioLo float64 `json:"ratio_lo"`
	RatioHi float64 `json:"ratio_hi"`
}

// overheadModes are the modes measured: what observe records in each.
var overheadModes = []struct {
	name         string
	count, trace bool
}{{"off", false, false}, {"counters", true, false}, {"trace", true, true}}

// Overhead measures on c what observing calls costs: set switches the
// rank's recording (control.Endpoint.Observe). Every rank runs it; rank 0
// returns the report, the others nil.
func Overhead(ctx context.Context, c *commtune.Comm, set func(count, trace bool), cfg OverheadConfig) (*OverheadReport, error) {
	if cfg.Calls < cfg.Rounds || cfg.Rounds < 1 || cfg.Size < 8 {
		return nil, fmt.Errorf("bench overhead: want rounds ≥ 1, calls ≥ rounds and a size of at least 8 bytes")
	}
	modes := overheadModes
	if !cfg.Trace {
		modes = modes[:2]
	}
	per := cfg.Calls / cfg.Rounds
	in, out := make([]float64, cfg.Size/8), make([]float64, cfg.Size/8)
	times := make([][]float64, len(modes)) // every call's time, by mode
	means := make([][]float64, len(modes)) // each round's mean, by mode
	call := func() error { return commtune.Allreduce(ctx, c, in, out, commtune.Sum) }
	defer set(true, true)
	for round := range cfg.Rounds {
		for k := range modes {
			m := (k + round) % len(modes) // each mode first in turn
			set(modes[m].count, modes[m].trace)
			if err := c.Barrier(ctx); err != nil {
				return nil, err
			}
			for range per / 10 { // warm the mode's path
				if err := call(); err != nil {
					return nil, err
				}
			}
			sum := 0.0
			for range per {
				t0 := observe.Now()
				if err := call(); err != nil {
					return nil, err
				}
				d := float64(observe.Now() - t0)
				times[m] = append(times[m], d)
				sum += d
			}
			means[m] = append(means[m], sum/float64(per))
		}
	}
	if c.Rank() != 0 {
		return nil, nil
	}
	rep := &OverheadReport{Bench: "overhead", Ranks: c.Size(), Transport: c.Transport((c.Rank() + 1) % c.Size()),
		Size: cfg.Size, Calls: per * cfg.Rounds, Rounds: cfg.Rounds}
	for m, mode := range modes {
		q := stats.Quantiles(times[m], 0.5, 0.99)
		ratios := make([]float64, cfg.Rounds)
		for r := range ratios {
			ratios[r] = means[m][r] / means[0][r]
		}
		rep.Modes = append(rep.Modes, OverheadMode{Mode: mode.name, Mean: stats.Mean(times[m]), P50: q[0], P99: q[1],
			Ratio: stats.Median(ratios), RatioLo: slices.Min(ratios), RatioHi: slices.Max(ratios)})
	}
	return rep, nil
}
