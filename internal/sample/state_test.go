package sample

import (
	"slices"
	"testing"
	"time"
)

// TestInState: a point keeps the blocks whose state probe was within
// stateSlack of the usual state, and all of them when none was: a point
// sampled only while the host was slow says so rather than vanishing.
func TestInState(t *testing.T) {
	b := func(probe time.Duration, rtt time.Duration) block { return block{[]time.Duration{rtt}, probe} }
	tests := []struct {
		name   string
		blocks []block
		usual  time.Duration
		want   []time.Duration // the kept blocks' round trips
	}{
		{"all in state", []block{b(100, 10), b(120, 11)}, 100, []time.Duration{10, 11}},
		{"a slow state is left out", []block{b(100, 10), b(160, 40)}, 100, []time.Duration{10}},
		{"at the slack, kept", []block{b(125, 12), b(126, 40)}, 100, []time.Duration{12}},
		{"none in state: all kept", []block{b(200, 30), b(300, 40)}, 100, []time.Duration{30, 40}},
		{"no usual state yet: all kept", []block{b(200, 30), b(100, 10)}, 0, []time.Duration{30, 10}},
	}
	for _, tc := range tests {
		var got []time.Duration
		for _, rtts := range inState(tc.blocks, tc.usual) {
			got = append(got, rtts...)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: kept %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestOutOfState: rank 0 asks again for the items of which some method
// has no block in the usual state, the quarter of the pass's probes.
func TestOutOfState(t *testing.T) {
	m := func(name string) Method { return Method{Name: name} }
	items := []item{
		{size: 8, methods: []Method{m("a"), m("b")}},
		{size: 64, methods: []Method{m("a"), m("b")}},
		{size: 512, methods: []Method{m("a")}},
	}
	s := &sampler{me: 0, rtts: map[string]map[int64][]block{
		"a": {8: {{probe: 100}}, 64: {{probe: 300}, {probe: 110}}, 512: {{probe: 400}}},
		"b": {8: {{probe: 101}}, 64: {{probe: 500}}},
	}}
	// Probes of the pass: mostly 100–110, a slow stretch at 300–500.
	s.states = []time.Duration{100, 101, 105, 110, 300, 400, 500}
	if u := s.usualState(); u != 103 { // position ¼·(7−1) = 1.5: halfway from 101 to 105
		t.Fatalf("usual state %v, want 103", u)
	}
	if got := s.outOfState(items); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("out of state: %v, want [1 2] (b at 64 and a at 512 ran only in the slow stretch)", got)
	}
	s.me = 1
	if got := s.outOfState(items); got != nil {
		t.Errorf("rank 1 decided %v; rank 0 decides", got)
	}
}
