package profile

import (
	"math"
	"testing"
)

// testCollTable is a small valid sampled table.
func testCollTable() CollTable {
	return CollTable{
		"allreduce": {
			{Bytes: 1024, Ranked: []CollTime{{"allreduce/recursive-doubling", 9, 5}, {"allreduce/ring", 12, 5}}},
			{Bytes: 1 << 20, Ranked: []CollTime{{"allreduce/ring", 500, 9}}},
		},
		"barrier": {{Bytes: 0, Ranked: []CollTime{{"barrier/dissemination", 3, 5}}}},
	}
}

// TestValidateColl: sampled tables with bad keys, sizes, rankings or
// times are refused; a good one passes.
func TestValidateColl(t *testing.T) {
	point := func(bytes int64, ranked ...CollTime) CollPoint { return CollPoint{Bytes: bytes, Ranked: ranked} }
	ok := CollTime{"bcast/binomial/seg=none", 5, 3}
	for _, tc := range []struct {
		name  string
		tr    Transport
		valid bool
	}{
		{"good", Transport{NodeCPUs: 2, Coll: map[string]CollTable{"4": testCollTable()}}, true},
		{"key not a number", Transport{NodeCPUs: 2, Coll: map[string]CollTable{"four": testCollTable()}}, false},
		{"one rank", Transport{NodeCPUs: 2, Coll: map[string]CollTable{"1": testCollTable()}}, false},
		{"no processors", Transport{Coll: map[string]CollTable{"4": testCollTable()}}, false},
		{"no points", Transport{NodeCPUs: 2, Coll: map[string]CollTable{"4": {"bcast": nil}}}, false},
		{"sizes not increasing", Transport{NodeCPUs: 2, Coll: map[string]CollTable{"4": {"bcast": {point(64, ok), point(64, ok)}}}}, false},
		{"negative size", Transport{NodeCPUs: 2, Coll: map[string]CollTable{"4": {"bcast": {point(-1, ok)}}}}, false},
		{"no algorithm", Transport{NodeCPUs: 2, Coll: map[string]CollTable{"4": {"bcast": {point(64)}}}}, false},
		{"unnamed algorithm", Transport{NodeCPUs: 2, Coll: map[string]CollTable{"4": {"bcast": {point(64, CollTime{"", 5, 3})}}}}, false},
		{"time not positive", Transport{NodeCPUs: 2, Coll: map[string]CollTable{"4": {"bcast": {point(64, CollTime{"a", 0, 3})}}}}, false},
		{"time not a number", Transport{NodeCPUs: 2, Coll: map[string]CollTable{"4": {"bcast": {point(64, CollTime{"a", math.NaN(), 3})}}}}, false},
		{"slower ranked first", Transport{NodeCPUs: 2, Coll: map[string]CollTable{"4": {"bcast": {point(64, CollTime{"a", 9, 3}, CollTime{"b", 5, 3})}}}}, false},
		{"no blocks", Transport{NodeCPUs: 2, Coll: map[string]CollTable{"4": {"bcast": {point(64, CollTime{"a", 5, 0})}}}}, false},
	} {
		p := &Profile{Version: Version, Transports: map[string]*Transport{"shm": &tc.tr}}
		if err := p.Validate(); (err == nil) != tc.valid {
			t.Errorf("%s: Validate() = %v, want valid %t", tc.name, err, tc.valid)
		}
	}
}

func TestCollPointMargin(t *testing.T) {
	p := CollPoint{Ranked: []CollTime{{"a", 10, 3}, {"b", 12, 3}}}
	if m := p.Margin(); math.Abs(m-0.2) > 1e-9 {
		t.Errorf("Margin() = %v, want 0.2", m)
	}
	if m := (CollPoint{Ranked: []CollTime{{"a", 10, 3}}}).Margin(); !math.IsInf(m, 1) {
		t.Errorf("Margin() of one algorithm = %v, want +Inf", m)
	}
}
