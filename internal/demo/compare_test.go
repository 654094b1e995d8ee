package demo

import (
	"math"
	"testing"
)

// runs builds rounds of one same-path operation (noise) and one operation
// whose paths differ, from per-round times of tuned and defaults.
func runs(same [][2]float64, differ [][2]float64) (tuned, defaults [][]Result) {
	for i := range differ {
		tuned = append(tuned, []Result{
			{Op: "pingpong", Bytes: 8, NS: same[i][0], Path: "eager/copy"},
			{Op: "pingpong", Bytes: 1 << 20, NS: differ[i][0], Path: "rendezvous/cma"},
		})
		defaults = append(defaults, []Result{
			{Op: "pingpong", Bytes: 8, NS: same[i][1], Path: "eager/copy"},
			{Op: "pingpong", Bytes: 1 << 20, NS: differ[i][1], Path: "rendezvous/copy"},
		})
	}
	return tuned, defaults
}

func TestCompare(t *testing.T) {
	quiet := [][2]float64{{100, 101}, {100, 99}, {100, 100}, {100, 102}, {100, 100}}
	noisy := [][2]float64{{100, 120}, {100, 125}, {100, 118}, {100, 121}, {100, 119}}
	for _, tc := range []struct {
		name         string
		same, differ [][2]float64
		noise        float64
		faster, lost int
	}{
		{"tuned wins", quiet, [][2]float64{{50, 100}, {52, 99}, {49, 101}, {51, 100}, {50, 98}}, MinNoise, 1, 0},
		{"tuned loses every round", quiet, [][2]float64{{100, 80}, {101, 79}, {99, 81}, {100, 80}, {102, 80}}, MinNoise, 0, 1},
		{"a loss in 3 rounds of 5 is noise", quiet, [][2]float64{{100, 80}, {100, 80}, {100, 80}, {80, 100}, {80, 100}}, MinNoise, 0, 0},
		{"within the noise of a same path", noisy, [][2]float64{{100, 85}, {100, 86}, {100, 84}, {100, 85}, {100, 85}}, 0.2, 0, 0},
		{"beyond the noise of a same path", noisy, [][2]float64{{100, 70}, {100, 71}, {100, 69}, {100, 70}, {100, 72}}, 0.2, 0, 1},
		{"even", quiet, quiet, MinNoise, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Compare(runs(tc.same, tc.differ))
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(v.Noise-tc.noise) > 1e-9 || v.Differ != 1 || v.Faster != tc.faster || len(v.Lost) != tc.lost {
				t.Errorf("noise %.3f, differ %d, faster %d, lost %d; want %.3f, 1, %d, %d", v.Noise, v.Differ, v.Faster, len(v.Lost), tc.noise, tc.faster, tc.lost)
			}
		})
	}
}

func TestCompareRefusesMismatchedRuns(t *testing.T) {
	tuned, defaults := runs([][2]float64{{1, 1}, {1, 1}}, [][2]float64{{1, 1}, {1, 1}})
	for _, tc := range []struct {
		name            string
		tuned, defaults [][]Result
	}{
		{"no runs", nil, nil},
		{"fewer default runs", tuned, defaults[:1]},
		{"an operation missing", tuned, [][]Result{defaults[0], defaults[1][:1]}},
		{"another size", tuned, [][]Result{defaults[0], {defaults[1][0], {Op: "pingpong", Bytes: 3}}}},
	} {
		if _, err := Compare(tc.tuned, tc.defaults); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestLostRuns(t *testing.T) {
	for _, tc := range []struct{ runs, want int }{{1, 1}, {3, 3}, {5, 4}, {10, 8}} {
		if got := LostRuns(tc.runs); got != tc.want {
			t.Errorf("LostRuns(%d) = %d, want %d", tc.runs, got, tc.want)
		}
	}
}

func TestSteady(t *testing.T) {
	for _, tc := range []struct {
		ns      []float64
		want    float64
		leftOut int
	}{
		{[]float64{100, 104, 98, 103, 101}, 101, 0},
		{[]float64{100, 400, 98, 103, 900}, 100, 2}, // two runs caught in a slow stretch
		{[]float64{100, 149, 150, 151}, 149, 1},     // 150 is within 1.5 × 100; 151 is not
		{[]float64{7}, 7, 0},
	} {
		if got, left := Steady(tc.ns); got != tc.want || left != tc.leftOut {
			t.Errorf("Steady(%v) = %v, %d left out; want %v, %d", tc.ns, got, left, tc.want, tc.leftOut)
		}
	}
}

// TestCompareMeans: beside the medians, a comparison carries the mean of
// the runs' means and the median of their 99th percentiles, over the runs
// Steady keeps, and the ratio of the means.
func TestCompareMeans(t *testing.T) {
	type run struct{ ns, mean, p99 float64 }
	tests := []struct {
		name               string
		tuned, defaults    []run
		tMean, tP99, dMean float64
		dP99, meanRatio    float64
		tMedian            float64
		leftOut            int
	}{
		{"all kept",
			[]run{{100, 120, 300}, {102, 150, 500}, {101, 90, 200}}, []run{{200, 240, 900}, {200, 260, 800}, {200, 250, 700}},
			120, 300, 250, 800, 250.0 / 120, 101, 0},
		{"a slow run left out of mean, p50 and p99",
			[]run{{100, 120, 300}, {400, 1000, 5000}, {101, 90, 200}}, []run{{200, 240, 900}, {200, 260, 800}, {200, 250, 700}},
			105, 250, 250, 800, 250.0 / 105, 100.5, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tuned, defaults [][]Result
			for i := range tc.tuned {
				a, b := tc.tuned[i], tc.defaults[i]
				tuned = append(tuned, []Result{{Op: "allreduce", Bytes: 8, NS: a.ns, MeanNS: a.mean, P99NS: a.p99, Path: "eager/copy"}})
				defaults = append(defaults, []Result{{Op: "allreduce", Bytes: 8, NS: b.ns, MeanNS: b.mean, P99NS: b.p99, Path: "eager/iovec"}})
			}
			v, err := Compare(tuned, defaults)
			if err != nil {
				t.Fatal(err)
			}
			c := v.Rows[0]
			near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
			if !near(c.Tuned.MeanNS, tc.tMean) || !near(c.Tuned.P99NS, tc.tP99) || !near(c.Defaults.MeanNS, tc.dMean) ||
				!near(c.Defaults.P99NS, tc.dP99) || !near(c.MeanRatio, tc.meanRatio) || !near(c.Tuned.NS, tc.tMedian) ||
				c.LeftOut != tc.leftOut {
				t.Errorf("tuned %+v, defaults %+v, mean ratio %v, left out %d", c.Tuned, c.Defaults, c.MeanRatio, c.LeftOut)
			}
		})
	}
}

// TestSamePathSteps: two names for the same steps are one path; the same
// steps digest missing on either side is not.
func TestSamePathSteps(t *testing.T) {
	for _, tc := range []struct {
		tuned, defaults Result
		want            bool
	}{
		{Result{Path: "a"}, Result{Path: "a"}, true},
		{Result{Path: "bcast/binomial", Steps: "x"}, Result{Path: "bcast/knomial/k=4", Steps: "x"}, true},
		{Result{Path: "bcast/binomial", Steps: "x"}, Result{Path: "bcast/binomial/pull", Steps: "y"}, false},
		{Result{Path: "a"}, Result{Path: "b"}, false},
	} {
		if got := (Comparison{Tuned: tc.tuned, Defaults: tc.defaults}).SamePath(); got != tc.want {
			t.Errorf("%+v against %+v: SamePath %v, want %v", tc.tuned, tc.defaults, got, tc.want)
		}
	}
}
