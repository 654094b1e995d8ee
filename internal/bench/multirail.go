package bench

import (
	"context"
	"fmt"
	"slices"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/sched"
	"github.com/commtune/commtune/internal/stats"
)

// MultirailConfig says what `commtune bench multirail` measures.
type MultirailConfig struct {
	Sizes  []int // message sizes
	Rounds int   // interleaved rounds: each figure is the median over them
	Reps   int   // round trips per mode, size and round (0: enough to move about 32 MiB, at least 2)
	// Offload adds the mode "split+offload": the curves split with
	// sched.Split.Offload set to this many bytes, chunks posted from
	// several cores (0: no such mode).
	Offload int
}

// MultirailRow is one mode at one size.
type MultirailRow struct {
	Mode          string  `json:"mode"`
	Bytes         int     `json:"bytes"`
	BandwidthMBps float64 `json:"bandwidth_MBps"` // median over rounds of size / (round trip / 2)
	// Chunks is the split the mode planned for a message of this size
	// with every rail idle, in bytes per rail (split modes only).
	Chunks []int `json:"chunks,omitempty"`
}

// MultirailReport is what bench multirail prints.
type MultirailReport struct {
	Bench  string         `json:"bench"`
	Rails  []string       `json:"rails"` // each rail's identity, in rail order
	Rounds int            `json:"rounds"`
	Rows   []MultirailRow `json:"rows"`
	// Factors are the rails' learned corrections at the end (observed
	// chunk times over the sampled curve's).
	Factors []float64 `json:"factors"`
}

// multirailMode is one way of sending: one rail alone, or a split rule.
type multirailMode struct {
	name     string
	strategy sched.Strategy
	rule     sched.SplitRule
	split    bool
}

// multirailModes lists each rail alone, then the iso, weighted and curves
// splits (seed 000 Fig. 21's four curves, and §III-C's N-rail rule), then,
// if offload > 0, the curves split with chunks of at least offload bytes
// posted from other cores (seed 002 §III-D).
func multirailModes(rails, offload int) []multirailMode {
	var ms []multirailMode
	for i := 0; i < rails; i++ {
		ms = append(ms, multirailMode{name: fmt.Sprintf("rail%d", i), strategy: sched.Single{Rail: i}})
	}
	for _, r := range []sched.SplitRule{sched.SplitIso, sched.SplitWeighted, sched.SplitCurves} {
		st := sched.Split{Rule: r}
		ms = append(ms, multirailMode{name: splitModeName(r), strategy: st, rule: r, split: true})
	}
	if offload > 0 {
		st := sched.Split{Rule: sched.SplitCurves, Offload: offload}
		ms = append(ms, multirailMode{name: st.Name(), strategy: st, rule: sched.SplitCurves, split: true})
	}
	return ms
}

func splitModeName(r sched.SplitRule) string {
	switch r {
	case sched.SplitIso:
		return "iso"
	case sched.SplitWeighted:
		return "weighted"
	}
	return "curves"
}

// Multirail runs on ranks 0 and 1 of c, which must be joined by at least
// two rails: a ping-pong of each size under each mode, the modes taking
// turns round by round so that drift hits all alike. Rank 0 returns the
// report.
func Multirail(ctx context.Context, c *commtune.Comm, ep control.Endpoint, cfg MultirailConfig) (*MultirailReport, error) {
	me := c.Rank()
	if c.Size() != 2 {
		return nil, fmt.Errorf("bench multirail needs exactly 2 ranks, have %d", c.Size())
	}
	peer := 1 - me
	defer ep.SetStrategy(nil)
	rails := ep.Rails(peer)
	if len(rails) < 2 {
		return nil, fmt.Errorf("bench multirail: %d rail reaches rank %d, want at least 2 (set COMMTUNE_RAILS)", len(rails), peer)
	}
	models := ep.RailModels(peer)
	if slices.Contains(models, nil) {
		return nil, fmt.Errorf("bench multirail: the profile has no curve for some rails (run `commtune sample --in-job` between these hosts)")
	}
	rounds := max(cfg.Rounds, 1)
	modes := multirailModes(len(rails), cfg.Offload)
	buf := make([]byte, slices.Max(cfg.Sizes))
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	rep := &MultirailReport{Bench: "multirail", Rounds: rounds}
	for _, r := range rails {
		rep.Rails = append(rep.Rails, r.Name)
	}
	samples := map[[2]int][]float64{} // (mode, size index) → one median (ns) per round
	for round := 0; round < rounds; round++ {
		for si, size := range cfg.Sizes {
			reps := cfg.Reps
			if reps <= 0 {
				reps = max(2, (32<<20)/size)
			}
			for j := range modes {
				mi := (j + round + si) % len(modes) // rotate who goes first
				ep.SetStrategy(modes[mi].strategy)
				if _, err := commtunePingPong(ctx, c, buf[:size], 1, nil); err != nil { // settle
					return nil, err
				}
				rtts, err := commtunePingPong(ctx, c, buf[:size], reps, nil)
				if err != nil {
					return nil, fmt.Errorf("%s at %d bytes: %w", modes[mi].name, size, err)
				}
				k := [2]int{mi, si}
				samples[k] = append(samples[k], stats.Median(rtts))
			}
		}
	}
	if me != 0 {
		return nil, nil
	}
	for _, m := range models {
		rep.Factors = append(rep.Factors, m.Factor())
	}
	busy := make([]float64, len(models))
	for mi, m := range modes {
		for si, size := range cfg.Sizes {
			row := MultirailRow{Mode: m.name, Bytes: size,
				BandwidthMBps: float64(size) / (stats.Median(samples[[2]int{mi, si}]) / 1e9 / 2) / 1e6}
			if m.split {
				row.Chunks, _ = sched.PlanSplit(m.rule, models, busy, size, 0)
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
	return rep, nil
}
