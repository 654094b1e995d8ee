package core

import (
	"testing"
	"time"
)

func TestSpinPolicy(t *testing.T) {
	tests := []struct {
		max     time.Duration
		reports []bool // done?
		want    [3]uint64
	}{
		{200 * time.Microsecond, []bool{true, true, false}, [3]uint64{2, 1, 0}},
		{-1, []bool{true, false}, [3]uint64{0, 0, 2}},
	}
	for _, tc := range tests {
		p := newSpinPolicy(tc.max, false)
		for _, done := range tc.reports {
			d := p.next()
			if (d > 0) != (tc.max > 0) || (d > 0 && d != tc.max) {
				t.Fatalf("max %v: budget %v", tc.max, d)
			}
			p.report(d, done)
		}
		if h, m, pk := p.counts(); [3]uint64{h, m, pk} != tc.want {
			t.Errorf("max %v: counts %d %d %d, want %v", tc.max, h, m, pk, tc.want)
		}
	}
}
