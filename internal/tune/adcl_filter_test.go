package tune

import (
	"math"
	"strings"
	"testing"
)

func TestFilteredMean(t *testing.T) {
	tests := []struct {
		name     string
		samples  []float64
		cfg      FilterConfig
		mean     float64 // NaN: want NaN
		outliers int
	}{
		{"no outliers", []float64{1, 2, 2.5, 2.9}, FilterConfig{}, 8.4 / 4, 0},
		{"one of ten removed", []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 10}, FilterConfig{}, 1, 1},
		{"20% removed", []float64{1, 1, 1, 1, 1, 1, 1, 1, 10, 10}, FilterConfig{}, 1, 2},
		{"one of five is 20%", []float64{2, 2, 2, 2, 8}, FilterConfig{}, 2, 1},
		{"over 20% kept", []float64{1, 1, 1, 1, 1, 1, 1, 10, 10, 10}, FilterConfig{}, 37.0 / 10, 3},
		{"all equal", []float64{2, 2, 2}, FilterConfig{}, 2, 0},
		{"single sample", []float64{5}, FilterConfig{}, 5, 0},
		{"exactly 3x is an outlier", []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 3}, FilterConfig{}, 1, 1},
		{"just under 3x is not", []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 2.999}, FilterConfig{}, 11.999 / 10, 0},
		{"ratio 2", []float64{1, 1, 1, 1, 2}, FilterConfig{Ratio: 2}, 1, 1},
		{"fraction 0.5 keeps 2 of 4 out", []float64{1, 1, 9, 9}, FilterConfig{MaxFraction: 0.5}, 1, 2},
		{"fraction boundary 29 of 100", append(repeat(1, 71), repeat(5, 29)...), FilterConfig{MaxFraction: 0.29}, 1, 29},
		{"filter off", []float64{1, 1, 1, 1, 100}, FilterConfig{Ratio: math.Inf(1)}, 104.0 / 5, 0},
		{"zero sample: all are outliers", []float64{0, 1, 1}, FilterConfig{MaxFraction: 1}, 2.0 / 3, 3},
		{"no samples", nil, FilterConfig{}, math.NaN(), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mean, outliers := FilteredMean(tt.samples, tt.cfg)
			same := mean == tt.mean || math.Abs(mean-tt.mean) < 1e-12 || (math.IsNaN(tt.mean) && math.IsNaN(mean))
			if !same || outliers != tt.outliers {
				t.Fatalf("FilteredMean(%v) = %v, %d; want %v, %d", tt.samples, mean, outliers, tt.mean, tt.outliers)
			}
		})
	}
}

func repeat(x float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = x
	}
	return out
}

func TestFilterConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  FilterConfig
		err  string // substring; "" for valid
	}{
		{"zero", FilterConfig{}, ""},
		{"set", FilterConfig{Ratio: 2, MaxFraction: 1}, ""},
		{"filter off", FilterConfig{Ratio: math.Inf(1)}, ""},
		{"ratio 1", FilterConfig{Ratio: 1}, "tune: outlier Ratio 1 does not exceed 1"},
		{"ratio negative", FilterConfig{Ratio: -3}, "Ratio -3"},
		{"ratio NaN", FilterConfig{Ratio: math.NaN()}, "Ratio NaN"},
		{"fraction above 1", FilterConfig{MaxFraction: 1.5}, "tune: outlier MaxFraction 1.5 is outside (0, 1]"},
		{"fraction negative", FilterConfig{MaxFraction: -0.2}, "MaxFraction -0.2"},
		{"fraction NaN", FilterConfig{MaxFraction: math.NaN()}, "MaxFraction NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.err == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.err)
			}
		})
	}
	if got := (FilterConfig{}).withDefaults(); got != (FilterConfig{Ratio: DefaultOutlierRatio, MaxFraction: DefaultOutlierFraction}) {
		t.Fatalf("defaults = %+v", got)
	}
}
