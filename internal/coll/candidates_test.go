package coll

import (
	"reflect"
	"testing"
)

func TestCandidates(t *testing.T) {
	tests := []struct {
		op          Operation
		ranks       int
		bytes       int
		commutative bool
		min, max    int // list length bounds
	}{
		{OpBarrier, 4, 0, true, 3, 3},
		{OpBcast, 4, 1 << 10, true, 3, 3},  // flat is 4-nomial on 4 ranks
		{OpBcast, 2, 1 << 10, true, 2, 2},  // every tree is one edge on 2: the table's choice and a twin
		{OpBcast, 2, 64 << 10, true, 2, 2}, // whole or in segments
		{OpAllreduce, 2, 64 << 10, true, 5, 5},
		{OpBcast, 16, 1 << 10, true, 3, 3},
		{OpBcast, 4, 1 << 20, true, 8, 9},
		{OpReduce, 4, 1 << 20, false, 8, 9},
		{OpAllreduce, 4, 8, true, 5, 5},
		{OpAllreduce, 4, 8, false, 3, 3},
		{OpAllreduce, 4, 1 << 20, true, 7, 8},
		{OpScatter, 4, 64, true, 4, 4}, // flat is 4-nomial on 4 ranks
		{OpGather, 4, 64, true, 4, 4},
		{OpAllgather, 4, 64, true, 3, 3},
		{OpAlltoall, 4, 64, true, 2, 2},
		{OpAlltoallv, 4, 64, true, 0, 0},
		{OpReduceScatterBlock, 4, 1 << 10, true, 5, 5},
		{OpReduceScatter, 4, 1 << 10, false, 3, 3},
		{OpScan, 4, 64, false, 2, 2},
		{OpExscan, 4, 1 << 20, true, 3, 3},
	}
	for _, tt := range tests {
		c := Candidates(tt.op, tt.ranks, tt.bytes, tt.commutative)
		if len(c) < tt.min || len(c) > tt.max {
			t.Errorf("%s ranks=%d bytes=%d commutative=%v: %d candidates %v, want %d..%d", tt.op, tt.ranks, tt.bytes, tt.commutative, len(c), c, tt.min, tt.max)
			continue
		}
		if len(c) == 0 {
			continue
		}
		if want := Decide(tt.op, tt.ranks, tt.bytes, tt.commutative); c[0] != want {
			t.Errorf("%s: first candidate %s, want the table's %s", tt.op, c[0].Name(), want.Name())
		}
		seen := map[Algorithm]bool{}
		var steps [][]Schedule
		for _, a := range c {
			if sc := schedules(a, tt.ranks, tt.bytes, tt.commutative); sc != nil {
				for _, o := range steps {
					if reflect.DeepEqual(o, sc) && len(c) > 2 { // a pair of twins is kept to draw
						t.Errorf("%s ranks=%d: %s runs the steps of an earlier candidate", tt.op, tt.ranks, a.Name())
					}
				}
				steps = append(steps, sc)
			}
			if seen[a] {
				t.Errorf("%s: %s listed twice", tt.op, a.Name())
			}
			seen[a] = true
			if !tt.commutative && a.Commutative() {
				t.Errorf("%s: %s needs a commutative operation", tt.op, a.Name())
			}
			if _, err := a.Build(Layout{Size: tt.ranks, Bytes: max(tt.bytes, 8), Elem: 8}, tt.commutative); err != nil {
				t.Errorf("%s: %s does not build: %v", tt.op, a.Name(), err)
			}
		}
		if again := Candidates(tt.op, tt.ranks, tt.bytes, tt.commutative); &again[0] != &c[0] {
			t.Errorf("%s: the list is not kept between calls", tt.op)
		}
	}
}

func TestSegmentNear(t *testing.T) {
	for _, tt := range []struct {
		bytes, ranks int
		want         string
	}{
		{16 << 10, 4, "4K"}, {64 << 10, 2, "16K"}, {1 << 20, 8, "256K"}, {8 << 20, 4, "256K"},
		{16 << 10, 9, "1K"}, {64 << 10, 16, "4K"}, {1 << 20, 64, "64K"}, {8 << 20, 9, "256K"},
	} {
		if got := segmentNear(tt.bytes, tt.ranks); got != tt.want {
			t.Errorf("segmentNear(%d, %d ranks) = %s, want %s", tt.bytes, tt.ranks, got, tt.want)
		}
	}
}

func TestStepsDigest(t *testing.T) {
	digest := func(spec string, ranks, bytes int) string {
		a, err := Parse(OpBcast, spec)
		if err != nil {
			t.Fatal(err)
		}
		return StepsDigest(a, ranks, bytes, true)
	}
	if a, b := digest("bcast/binomial/seg=none/pull", 2, 64<<10), digest("bcast/knomial/k=4/seg=none/pull", 2, 64<<10); a == "" || a != b {
		t.Errorf("binomial and 4-nomial on 2 ranks: %q and %q, want one digest", a, b)
	}
	if a, b := digest("binomial", 2, 64<<10), digest("binomial/pull", 2, 64<<10); a == b {
		t.Errorf("pulled and not: both %q", a)
	}
	if a, b := digest("binomial", 8, 64<<10), digest("chain", 8, 64<<10); a == b {
		t.Errorf("binomial and chain on 8 ranks: both %q", a)
	}
	if d := digest("binomial", dedupRanks+1, 1<<10); d != "" {
		t.Errorf("%d ranks: %q, want none", dedupRanks+1, d)
	}
}
