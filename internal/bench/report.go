package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/commtune/commtune/internal/units"
)

// WriteJSON prints r as one JSON object and a newline.
func WriteJSON(w io.Writer, r *Report) error {
	return json.NewEncoder(w).Encode(r)
}

// WriteTable prints r like osu_latency, one line per size, with the mean
// half round trip first and its spread beside it, then each baseline's
// mean and bandwidth with commtune's bandwidth as a ratio of it. The
// bandwidths are the message size over the mean half round trip.
func WriteTable(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "# commtune %s: transport %s, method %s, %d ranks; latency = half round trip, round trips back to back: mean, p50, p99, max; bandwidth = bytes / mean\n",
		r.Bench, r.Transport, r.Method, r.Ranks)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "size\tmean(us)\tp50(us)\tp99(us)\tmax(us)\tbandwidth(MB/s)\t")
	for _, b := range r.Baselines {
		fmt.Fprintf(tw, "%s(us)\t%s(MB/s)\tratio\t", b.Name, b.Name)
	}
	fmt.Fprintln(tw)
	for i, x := range r.Results {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\t", units.FormatSize(int64(x.Bytes)), x.MeanUS, x.LatencyUS, x.P99US, x.MaxUS, x.MeanMBps())
		for _, b := range r.Baselines {
			y := b.Results[i]
			fmt.Fprintf(tw, "%.2f\t%.1f\t%.3f\t", y.MeanUS, y.MeanMBps(), x.MeanMBps()/y.MeanMBps())
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// WriteMethodTable prints one line per size with each report's bandwidth
// at the mean (reports of the same sizes, one per method) and the first
// report's baselines, each method's bandwidth also as a ratio of every
// baseline.
func WriteMethodTable(w io.Writer, reps []*Report) error {
	if len(reps) == 0 {
		return nil
	}
	first := reps[0]
	fmt.Fprintf(w, "# commtune %s over %s, %d ranks: bandwidth (MB/s) = bytes / mean half round trip, per method\n",
		first.Bench, first.Transport, first.Ranks)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "size\t")
	for _, r := range reps {
		fmt.Fprintf(tw, "%s\t", r.Method)
		if r.Method == "auto" {
			fmt.Fprint(tw, "auto took\t")
		}
	}
	for _, b := range first.Baselines {
		fmt.Fprintf(tw, "%s\t", b.Name)
	}
	for _, b := range first.Baselines {
		for _, r := range reps {
			fmt.Fprintf(tw, "%s/%s\t", r.Method, b.Name)
		}
	}
	fmt.Fprintln(tw)
	for i, x := range first.Results {
		fmt.Fprintf(tw, "%s\t", units.FormatSize(int64(x.Bytes)))
		for _, r := range reps {
			fmt.Fprintf(tw, "%.0f\t", r.Results[i].MeanMBps())
			if r.Method == "auto" {
				fmt.Fprintf(tw, "%s\t", cmp.Or(r.Results[i].Path, "?"))
			}
		}
		for _, b := range first.Baselines {
			fmt.Fprintf(tw, "%.0f\t", b.Results[i].MeanMBps())
		}
		for _, b := range first.Baselines {
			for _, r := range reps {
				fmt.Fprintf(tw, "%.2f\t", r.Results[i].MeanMBps()/b.Results[i].MeanMBps())
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
