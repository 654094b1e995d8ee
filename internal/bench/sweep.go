package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sample"
	"github.com/commtune/commtune/internal/stats"
	"github.com/commtune/commtune/internal/units"
)

// The fixed settings a sweep holds the tuned configuration against (seed
// 000 §IV: hard-coded thresholds such as libraries ship).
var (
	fixedRendezvous = []int{4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10}
	fixedIovec      = []int{0, 64, 1 << 10, 4 << 10}
)

// Tuned names the tuned configuration in a sweep.
const Tuned = "tuned"

// SweepRun is rank 0's result of one sweep: each setting's one-way time
// at each size.
type SweepRun struct {
	Transport string                   `json:"transport"`
	Settings  []string                 `json:"settings"` // Tuned first
	Policies  map[string]core.Policy   `json:"policies"`
	Curves    map[string]profile.Curve `json:"curves"`
}

// sweepSetting is one configuration a sweep times.
type sweepSetting struct {
	name   string
	policy core.Policy
}

// Sweep times, between the two ranks of c, the policy Init applied to
// their link (the tuned one, from the profile) against fixed settings: the
// rendezvous threshold at 4–64 KiB, the iovec threshold at 0, 64 B, 1 KiB
// and 4 KiB, and on shared memory each large-message method alone — each
// fixed setting changing one parameter of the tuned policy. The sizes
// bracket every tuned threshold and the fixed ones. Rank 0 returns the
// result (rank 1 nil).
func Sweep(ctx context.Context, c *commtune.Comm, ep control.Endpoint, plan sample.Plan, progress sample.Progress) (*SweepRun, error) {
	if c.Size() != 2 {
		return nil, fmt.Errorf("bench: a sweep needs exactly 2 ranks, not %d", c.Size())
	}
	peer := 1 - c.Rank()
	tuned := ep.Policy(peer)
	settings := []sweepSetting{{Tuned, tuned}}
	for _, v := range fixedRendezvous {
		p := tuned
		p.Rendezvous = v
		settings = append(settings, sweepSetting{fmt.Sprintf("rendezvous=%s", units.FormatSize(int64(v))), p})
	}
	for _, v := range fixedIovec {
		p := tuned
		p.Iovec = v
		settings = append(settings, sweepSetting{fmt.Sprintf("iovec=%s", units.FormatSize(int64(v))), p})
	}
	if ep.Transport(peer) == "shm" {
		for _, m := range profile.LargeMethods {
			p := tuned
			p.Large = []core.LargeMethod{{Method: core.MethodFor(m)}}
			if ep.SetPolicy(peer, p) != nil {
				continue // not available here (the same on both ranks: their rails agree)
			}
			settings = append(settings, sweepSetting{"large=" + m, p})
		}
		if err := ep.SetPolicy(peer, tuned); err != nil {
			return nil, err
		}
	}
	methods := make([]sample.Method, len(settings))
	names := make([]string, len(settings))
	for i, s := range settings {
		methods[i] = sample.Method{Name: s.name, Policy: s.policy, MaxSize: sample.MaxSize}
		names[i] = s.name
	}
	curves, err := sample.Measure(ctx, c, ep, methods, sweepSizes(tuned), plan, progress)
	if err != nil || c.Rank() != 0 {
		return nil, err
	}
	pols := map[string]core.Policy{}
	for _, s := range settings {
		pols[s.name] = s.policy
	}
	return &SweepRun{Transport: ep.Transport(peer), Settings: names, Policies: pols, Curves: curves}, nil
}

// sweepSizes brackets each threshold of the tuned policy (a quarter, half,
// the threshold itself, twice and four times) and falls between the fixed
// rendezvous thresholds, where a wrong one shows.
func sweepSizes(p core.Policy) []int64 {
	var out []int64
	add := func(n int64) {
		if n >= 1 && n <= sample.MaxSize {
			out = append(out, n)
		}
	}
	around := func(t int64) {
		for _, f := range []float64{0.25, 0.5, 1, 2, 4} {
			add(int64(math.Round(float64(t) * f)))
		}
	}
	if p.Iovec > 1 && p.Iovec <= p.Rendezvous {
		around(int64(p.Iovec))
	}
	around(int64(p.Rendezvous) + 1)
	for _, l := range p.Large {
		if l.Min > p.Rendezvous+1 {
			around(int64(l.Min))
		}
	}
	for _, v := range []int64{32, 256, 3 << 10, 6 << 10, 12 << 10, 24 << 10, 48 << 10, 96 << 10} {
		add(v)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// SweepRow is one size of a sweep's summary.
type SweepRow struct {
	Size          int64   `json:"size"`
	Path          string  `json:"path"` // how the tuned configuration sends it
	TunedNS       float64 `json:"tuned_ns"`
	Best          string  `json:"best_fixed"` // a fixed setting taking the fastest path
	BestPath      string  `json:"best_path"`
	BestNS        float64 `json:"best_fixed_ns"`
	Worst         string  `json:"worst_fixed"`
	WorstPath     string  `json:"worst_path"`
	WorstNS       float64 `json:"worst_fixed_ns"`
	TunedOverBest float64 `json:"tuned_over_best"`
	WorstOverBest float64 `json:"worst_over_best"`
}

// SweepSummary combines the runs of one transport.
type SweepSummary struct {
	Transport string     `json:"transport"`
	Runs      int        `json:"runs"`
	Settings  []string   `json:"settings"`
	Rows      []SweepRow `json:"rows"`
}

// Summarize combines runs of the same transport and settings. At each
// size, settings that send the message the same way are one configuration
// there — a rendezvous threshold of 64K and one of 32K both send 8 KiB
// eagerly — so their times, over every run, are pooled into one median:
// comparing them separately would only compare noise, and the best of a
// dozen noisy copies of the tuned path would beat it by the noise alone.
func Summarize(runs []*SweepRun) (*SweepSummary, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("bench: no sweep runs")
	}
	first := runs[0]
	sum := &SweepSummary{Transport: first.Transport, Runs: len(runs), Settings: first.Settings}
	for i, s := range first.Curves[Tuned] {
		times := map[string][]float64{} // by path
		names := map[string]string{}    // a fixed setting taking each path
		for _, name := range first.Settings {
			p := first.Policies[name].Path(s.Size, first.Transport, core.Contiguous)
			for _, r := range runs {
				c := r.Curves[name]
				if i >= len(c) || c[i].Size != s.Size {
					return nil, fmt.Errorf("bench: sweep runs disagree on %s's sizes", name)
				}
				times[p] = append(times[p], c[i].Median)
			}
			if name != Tuned && names[p] == "" {
				names[p] = name
			}
		}
		tunedPath := first.Policies[Tuned].Path(s.Size, first.Transport, core.Contiguous)
		row := SweepRow{Size: s.Size, Path: tunedPath, TunedNS: stats.Median(times[tunedPath]), BestNS: math.Inf(1)}
		for p, ts := range times {
			if names[p] == "" {
				continue // only the tuned configuration sends it this way
			}
			t := stats.Median(ts)
			if t < row.BestNS || t == row.BestNS && p < row.BestPath {
				row.Best, row.BestPath, row.BestNS = names[p], p, t
			}
			if t > row.WorstNS || t == row.WorstNS && p < row.WorstPath {
				row.Worst, row.WorstPath, row.WorstNS = names[p], p, t
			}
		}
		row.TunedOverBest, row.WorstOverBest = row.TunedNS/row.BestNS, row.WorstNS/row.BestNS
		sum.Rows = append(sum.Rows, row)
	}
	return sum, nil
}

// WriteSweep prints a summary as a table: per size the tuned time, the
// best and worst fixed settings, and the two ratios the tuning is judged
// by (seed 000 §IV: tuned against the best hard-coded value, and how far
// off a wrong hard-coded value is).
func WriteSweep(w io.Writer, s *SweepSummary) error {
	fmt.Fprintf(w, "# commtune bench sweep over %s, 2 ranks, %d run(s): one-way time (µs), median over the runs\n", s.Transport, s.Runs)
	fmt.Fprintf(w, "# fixed settings: %v\n", s.Settings[1:])
	fmt.Fprintln(w, "# settings that send a size the same way are one configuration at that size (pooled); the path is how")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "size\ttuned\tpath\tbest fixed\t\t\tworst fixed\t\t\ttuned/best\tworst/best\t\n")
	maxTuned, maxWorst := 0.0, 0.0
	for _, r := range s.Rows {
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%.2f\t%s\t%s\t%.2f\t%s\t%s\t%.3f\t%.2f\t\n", units.FormatSize(r.Size), r.TunedNS/1e3, r.Path,
			r.BestNS/1e3, r.Best, r.BestPath, r.WorstNS/1e3, r.Worst, r.WorstPath, r.TunedOverBest, r.WorstOverBest)
		maxTuned, maxWorst = max(maxTuned, r.TunedOverBest), max(maxWorst, r.WorstNS/r.TunedNS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "# tuned is at most %.1f%% slower than the best fixed setting at any size; the worst fixed setting is up to %.0f%% slower than tuned\n",
		100*(maxTuned-1), 100*(maxWorst-1))
	return err
}
