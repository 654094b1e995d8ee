package bench

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/commtune/commtune/internal/stats"
	"github.com/commtune/commtune/internal/units"
)

// VsRow is one size of a side-by-side comparison: medians over rounds of
// each side's median time, and commtune's time as a ratio of the
// reference's (below 1: commtune is faster).
type VsRow struct {
	Bytes      int     `json:"bytes"`
	CommtuneUS float64 `json:"commtune_us"`
	RefUS      float64 `json:"ref_us"`
	Ratio      float64 `json:"ratio"`
}

// VsReport is `commtune bench pingpong|coll --vs MPI`: commtune and an MPI
// implementation run in turn, Rounds times each, in one invocation.
type VsReport struct {
	Bench     string  `json:"bench"`
	Op        string  `json:"op,omitempty"`
	Algo      string  `json:"algo,omitempty"`
	Ranks     int     `json:"ranks"`
	Transport string  `json:"transport"`
	Ref       string  `json:"ref"`
	Rounds    int     `json:"rounds"`
	Rows      []VsRow `json:"rows"`
}

// VsRows pairs per-round times by size: ours[k][i] and ref[k][i] are round
// k's times at sizes[i].
func VsRows(sizes []int, ours, ref [][]float64) []VsRow {
	rows := make([]VsRow, len(sizes))
	for i, s := range sizes {
		var a, b []float64
		for k := range ours {
			a = append(a, ours[k][i])
		}
		for k := range ref {
			b = append(b, ref[k][i])
		}
		rows[i] = VsRow{Bytes: s, CommtuneUS: stats.Median(a), RefUS: stats.Median(b)}
		if rows[i].RefUS > 0 {
			rows[i].Ratio = rows[i].CommtuneUS / rows[i].RefUS
		}
	}
	return rows
}

// WriteVsTable prints r: per size both times and the ratio, with
// bandwidths for a ping-pong.
func WriteVsTable(w io.Writer, r *VsReport) error {
	what := r.Bench
	if r.Op != "" {
		what = r.Op + " (" + r.Algo + ")"
	}
	fmt.Fprintf(w, "# commtune against %s: %s, %d ranks, transport %s; medians of %d alternating runs of each; ratio = commtune time / %s time (below 1: commtune is faster)\n",
		r.Ref, what, r.Ranks, r.Transport, r.Rounds, r.Ref)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	pp := r.Bench == "pingpong"
	fmt.Fprintf(tw, "size\tcommtune us\t%s us\tratio\t", r.Ref)
	if pp {
		fmt.Fprintf(tw, "commtune MB/s\t%s MB/s\t", r.Ref)
	}
	fmt.Fprintln(tw)
	for _, x := range r.Rows {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t", units.FormatSize(int64(x.Bytes)), x.CommtuneUS, x.RefUS, x.Ratio)
		if pp {
			fmt.Fprintf(tw, "%.0f\t%.0f\t", mbps(x.Bytes, x.CommtuneUS), mbps(x.Bytes, x.RefUS))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func mbps(bytes int, us float64) float64 {
	if us <= 0 {
		return 0
	}
	return float64(bytes) / us
}
