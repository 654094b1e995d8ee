package plot

import (
	"errors"
	"testing"

	"github.com/commtune/commtune/internal/testenv"
)

func TestWriteConvergence(t *testing.T) {
	testenv.SkipUnderRace(t, "drawing figures in one goroutine")
	var calls []Call
	for i := range 300 {
		impl, us := "ring", 100.0+float64(i%7)
		if i%5 == 0 {
			impl, us = "binomial", 150
		}
		calls = append(calls, Call{TimeUS: us, Impl: impl})
	}
	tests := []struct {
		name  string
		calls []Call
		fixed map[string]float64
		want  int // files; 0: an error
	}{
		{"with levels", calls, map[string]float64{"ring": 103, "binomial": 150, "never-drawn": 400}, len(Formats)},
		{"no levels", calls[:3], nil, len(Formats)},
		{"no calls", nil, nil, 0},
		{"no positive time", []Call{{TimeUS: 0, Impl: "ring"}}, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files, err := WriteConvergence(t.TempDir(), Convergence{Name: "conv/../x", Title: tc.name, Calls: tc.calls, Fixed: tc.fixed})
			if tc.want == 0 {
				if !errors.Is(err, errNoData) {
					t.Fatalf("err = %v, want errNoData", err)
				}
				return
			}
			if err != nil || len(files) != tc.want {
				t.Fatalf("%d files, err %v; want %d", len(files), err, tc.want)
			}
			for _, f := range files {
				checkImage(t, f)
			}
		})
	}
}

func TestRunningMean(t *testing.T) {
	calls := []Call{{TimeUS: 1}, {TimeUS: 2}, {TimeUS: 3}, {TimeUS: 6}}
	tests := []struct {
		w    int
		want []float64 // Y from call w on
	}{
		{1, []float64{1, 2, 3, 6}},
		{2, []float64{1.5, 2.5, 4.5}},
		{4, []float64{3}},
		{10, []float64{3}}, // wider than the run: the run's mean
	}
	for _, tc := range tests {
		got := runningMean(calls, tc.w)
		if len(got) != len(tc.want) {
			t.Fatalf("w=%d: %d points, want %d", tc.w, len(got), len(tc.want))
		}
		for i, xy := range got {
			if xy.Y != tc.want[i] || int(xy.X) != len(calls)-len(tc.want)+i+1 {
				t.Errorf("w=%d point %d = %v, want (%d, %v)", tc.w, i, xy, len(calls)-len(tc.want)+i+1, tc.want[i])
			}
		}
	}
}
