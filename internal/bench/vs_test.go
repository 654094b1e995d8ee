package bench

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// TestVsRows: per size, the means over the rounds' means, the medians of
// their quantiles, the largest maximum, and the ratios of commtune's to
// the reference's.
func TestVsRows(t *testing.T) {
	s := func(mean, p50, p90, p99, max float64) Summary {
		return Summary{Calls: 10, Mean: mean, P50: p50, P90: p90, P99: p99, Max: max}
	}
	ours := [][]Summary{
		{s(2, 1, 1, 5, 9), s(12, 10, 11, 40, 50)},
		{s(4, 3, 3, 7, 8), s(36, 30, 31, 90, 900)},
		{s(3, 2, 2, 6, 7), s(24, 20, 21, 60, 70)},
	}
	ref := [][]Summary{
		{s(3, 2, 2, 3, 4), s(5, 5, 5, 5, 5)},
		{s(3, 2, 2, 3, 4), s(5, 5, 5, 5, 5)},
		{s(6, 8, 8, 9, 9), s(5, 5, 5, 5, 5)},
	}
	rows := VsRows([]int{8, 1024}, ours, ref)
	want := []VsRow{
		{Bytes: 8, CommtuneUS: 2, RefUS: 2, Ratio: 1,
			CommtuneMeanUS: 3, RefMeanUS: 4, MeanRatio: 0.75,
			CommtuneP90US: 2, RefP90US: 2, CommtuneP99US: 6, RefP99US: 3, CommtuneMaxUS: 9, RefMaxUS: 9,
			CommtuneRoundMeansUS: []float64{2, 4, 3}, RefRoundMeansUS: []float64{3, 3, 6}},
		{Bytes: 1024, CommtuneUS: 20, RefUS: 5, Ratio: 4,
			CommtuneMeanUS: 24, RefMeanUS: 5, MeanRatio: 4.8,
			CommtuneP90US: 21, RefP90US: 5, CommtuneP99US: 60, RefP99US: 5, CommtuneMaxUS: 900, RefMaxUS: 5,
			CommtuneRoundMeansUS: []float64{12, 36, 24}, RefRoundMeansUS: []float64{5, 5, 5}},
	}
	for i, r := range rows {
		if !reflect.DeepEqual(r, want[i]) {
			t.Errorf("row %d = %+v,\nwant %+v", i, r, want[i])
		}
	}
}

func TestWriteVsTable(t *testing.T) {
	tests := []struct {
		rep  VsReport
		want []string
	}{
		{VsReport{Bench: "pingpong", Ranks: 2, Transport: "shm", Timing: BackToBack, Ref: "openmpi", Rounds: 3,
			Rows: []VsRow{{Bytes: 1 << 20, CommtuneUS: 90, RefUS: 200, Ratio: 0.45, CommtuneMeanUS: 100, RefMeanUS: 200, MeanRatio: 0.5, CommtuneP99US: 333, RefP99US: 444,
				CommtuneRoundMeansUS: []float64{90, 110, 100}, RefRoundMeansUS: []float64{150, 250, 200}}}},
			[]string{"openmpi MB/s", "1M", "0.50", "10485.8", "5242.9", "333.00", "444.00", "calls back to back", "commtune mean / openmpi mean",
				"runs' means", "90.00 110.00 100.00 | 150.00 250.00 200.00"}},
		{VsReport{Bench: "coll", Op: "bcast", Algo: "bcast/binomial", Ranks: 4, Transport: "auto", Timing: BarrierEach, Ref: "mpich", Rounds: 1,
			Rows: []VsRow{{Bytes: 8, CommtuneUS: 3, RefUS: 1, Ratio: 3, CommtuneMeanUS: 4, RefMeanUS: 1, MeanRatio: 4}}},
			[]string{"bcast (bcast/binomial), 4 ranks", "mpich mean", "4.00", "a barrier before each call"}},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		if err := WriteVsTable(&b, &tc.rep); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("table lacks %q:\n%s", w, b.String())
			}
		}
	}
}
