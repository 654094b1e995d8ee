package bench

import (
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

// WriteTable prints r like osu_latency: one line per size, with the
// baseline and the ratio when there is one.
func WriteTable(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "# commtune %s: transport %s, method %s, %d ranks; latency = median half round trip\n",
		r.Bench, r.Transport, r.Method, r.Ranks)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if r.Baseline == nil {
		fmt.Fprintln(tw, "size\tlatency(us)\tbandwidth(MB/s)\tmean(us)\tp99(us)\t")
		for _, x := range r.Results {
			fmt.Fprintf(tw, "%s\t%.2f\t%.1f\t%.2f\t%.2f\t\n", units.FormatSize(int64(x.Bytes)), x.LatencyUS, x.BandwidthMBps, x.MeanUS, x.P99US)
		}
		return tw.Flush()
	}
	fmt.Fprintf(tw, "size\tlatency(us)\tbandwidth(MB/s)\tmean(us)\t%s(us)\t%s(MB/s)\t%s mean(us)\tlatency ratio\tbandwidth ratio\tmean ratio\t\n",
		r.Baseline.Name, r.Baseline.Name, r.Baseline.Name)
	for i, x := range r.Results {
		b := r.Baseline.Results[i]
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f\t%.2f\t%.2f\t%.1f\t%.2f\t%.3f\t%.3f\t%.3f\t\n", units.FormatSize(int64(x.Bytes)),
			x.LatencyUS, x.BandwidthMBps, x.MeanUS, b.LatencyUS, b.BandwidthMBps, b.MeanUS,
			x.LatencyUS/b.LatencyUS, x.BandwidthMBps/b.BandwidthMBps, x.MeanUS/b.MeanUS)
	}
	return tw.Flush()
}
