package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/commtune/commtune/internal/stats"
	"github.com/commtune/commtune/internal/units"
)

// VsRow is one size of a side-by-side comparison, each side's figures
// taken over the rounds: the means are the mean of the rounds' means (the
// mean over every call, as each round times as many), the quantiles the
// median of the rounds' quantiles, the maximum the largest. MeanRatio is
// the headline: commtune's mean as a ratio of the reference's (below 1:
// commtune is faster).
type VsRow struct {
	Bytes int `json:"bytes"`
	// CommtuneUS and RefUS are the medians (p50) and Ratio their ratio.
	CommtuneUS float64 `json:"commtune_us"`
	RefUS      float64 `json:"ref_us"`
	Ratio      float64 `json:"ratio"`

	CommtuneMeanUS float64 `json:"commtune_mean_us"`
	RefMeanUS      float64 `json:"ref_mean_us"`
	MeanRatio      float64 `json:"mean_ratio"`
	CommtuneP90US  float64 `json:"commtune_p90_us"`
	RefP90US       float64 `json:"ref_p90_us"`
	CommtuneP99US  float64 `json:"commtune_p99_us"`
	RefP99US       float64 `json:"ref_p99_us"`
	CommtuneMaxUS  float64 `json:"commtune_max_us"`
	RefMaxUS       float64 `json:"ref_max_us"`
	// The rounds' own means, in order: a round far from the others (a
	// machine that was busy for one run) shows here, not in the medians.
	CommtuneRoundMeansUS []float64 `json:"commtune_round_means_us"`
	RefRoundMeansUS      []float64 `json:"ref_round_means_us"`
}

// VsReport is `commtune bench pingpong|coll --vs MPI`: commtune and an MPI
// implementation run in turn, Rounds times each, in one invocation.
type VsReport struct {
	Bench     string  `json:"bench"`
	Op        string  `json:"op,omitempty"`
	Algo      string  `json:"algo,omitempty"`
	Ranks     int     `json:"ranks"`
	Transport string  `json:"transport"`
	Timing    Timing  `json:"timing"`
	Ref       string  `json:"ref"`
	Rounds    int     `json:"rounds"`
	Rows      []VsRow `json:"rows"`
}

// VsRows pairs per-round summaries by size: ours[k][i] and ref[k][i] are
// round k's at sizes[i].
func VsRows(sizes []int, ours, ref [][]Summary) []VsRow {
	rows := make([]VsRow, len(sizes))
	for i, s := range sizes {
		a, b := overRounds(ours, i), overRounds(ref, i)
		rows[i] = VsRow{Bytes: s,
			CommtuneUS: a.P50, RefUS: b.P50, Ratio: ratio(a.P50, b.P50),
			CommtuneMeanUS: a.Mean, RefMeanUS: b.Mean, MeanRatio: ratio(a.Mean, b.Mean),
			CommtuneP90US: a.P90, RefP90US: b.P90, CommtuneP99US: a.P99, RefP99US: b.P99,
			CommtuneMaxUS: a.Max, RefMaxUS: b.Max,
			CommtuneRoundMeansUS: roundMeans(ours, i), RefRoundMeansUS: roundMeans(ref, i)}
	}
	return rows
}

// overRounds combines the rounds' summaries at size index i as VsRow
// says.
func overRounds(rounds [][]Summary, i int) Summary {
	var means, p50, p90, p99 []float64
	var out Summary
	for _, r := range rounds {
		x := r[i]
		means, p50, p90, p99 = append(means, x.Mean), append(p50, x.P50), append(p90, x.P90), append(p99, x.P99)
		out.Calls += x.Calls
		out.Max = max(out.Max, x.Max)
	}
	out.Mean, out.P50, out.P90, out.P99 = stats.Mean(means), stats.Median(p50), stats.Median(p90), stats.Median(p99)
	return out
}

// roundMeans returns each round's mean at size index i.
func roundMeans(rounds [][]Summary, i int) []float64 {
	out := make([]float64, len(rounds))
	for k, r := range rounds {
		out[k] = r[i].Mean
	}
	return out
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// WriteVsTable prints r: per size each side's mean with its median and
// 99th percentile, and the ratio of the means, with the bandwidths at the
// means for a ping-pong.
func WriteVsTable(w io.Writer, r *VsReport) error {
	what := r.Bench
	if r.Op != "" {
		what = r.Op + " (" + r.Algo + ")"
	}
	fmt.Fprintf(w, "# commtune against %s: %s, %d ranks, transport %s, %s; %d alternating runs of each; times (us): mean over the runs' calls, p50 and p99 medians over the runs; ratio = commtune mean / %s mean (below 1: commtune is faster); then each run's mean, commtune | %s\n",
		r.Ref, what, r.Ranks, r.Transport, timingLine(r.Timing), r.Rounds, r.Ref, r.Ref)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// Bandwidth for ping-pong (bytes over one-way time) and the one-sided
	// bandwidth patterns (RMABurst operations per iteration).
	pp := r.Bench == "pingpong" || r.Bench == "rma" && (r.Op == RMAPutBW || r.Op == RMAGetBW)
	per := 1
	if r.Bench == "rma" {
		per = RMABurst
	}
	fmt.Fprintf(tw, "size\tcommtune mean\tp50\tp99\t%s mean\tp50\tp99\tratio\t", r.Ref)
	if pp {
		fmt.Fprintf(tw, "commtune MB/s\t%s MB/s\t", r.Ref)
	}
	fmt.Fprintln(tw, "  runs' means")
	for _, x := range r.Rows {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t", units.FormatSize(int64(x.Bytes)),
			x.CommtuneMeanUS, x.CommtuneUS, x.CommtuneP99US, x.RefMeanUS, x.RefUS, x.RefP99US, x.MeanRatio)
		if pp {
			fmt.Fprintf(tw, "%.1f\t%.1f\t", mbps(per*x.Bytes, x.CommtuneMeanUS), mbps(per*x.Bytes, x.RefMeanUS))
		}
		fmt.Fprintf(tw, "  %s | %s\n", joinUS(x.CommtuneRoundMeansUS), joinUS(x.RefRoundMeansUS))
	}
	return tw.Flush()
}

// joinUS prints times to two decimals, separated by spaces.
func joinUS(us []float64) string {
	parts := make([]string, len(us))
	for i, v := range us {
		parts[i] = strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strings.Join(parts, " ")
}

func mbps(bytes int, us float64) float64 {
	if us <= 0 {
		return 0
	}
	return float64(bytes) / us
}
