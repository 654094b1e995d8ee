package profile

import (
	"strings"
	"testing"
)

// nodeCurve makes a curve of the given medians (ns) at 4K, 16K, 64K, 256K.
func nodeCurve(ns ...float64) Curve {
	var c Curve
	for i, v := range ns {
		c = append(c, Sample{Size: 4096 << (2 * i), Median: v, P25: v, P75: v, Reps: 9})
	}
	return c
}

// TestCollPull: the crossing is read on the node pass on the same side of
// oversubscription as the job, the nearest in ranks; a pass where pulling
// never wins says never; no pass on that side says nothing.
func TestCollPull(t *testing.T) {
	tr := &Transport{NodeCPUs: 2, Node: map[string]map[string]Curve{
		"2": {NodeRing: nodeCurve(10e3, 20e3, 60e3, 250e3), NodePull: nodeCurve(14e3, 30e3, 90e3, 400e3)},
		"4": {NodeRing: nodeCurve(50e3, 80e3, 200e3, 900e3), NodePull: nodeCurve(70e3, 68e3, 120e3, 500e3)},
		"8": {NodeRing: nodeCurve(90e3, 160e3, 400e3, 1900e3), NodePull: nodeCurve(80e3, 100e3, 200e3, 900e3)},
	}}
	if err := (&Profile{Version: Version, Transports: map[string]*Transport{"shm": tr}}).Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ranks, cpus int
		ok          bool
		from        int64 // 0: never
		sampled     int
	}{
		{2, 2, true, 0, 2},     // a processor each: the rings win
		{4, 2, true, 0, 4},     // oversubscribed: pulled from between 4K and 16K
		{6, 2, true, 0, 4},     // nearest: 4 (tie with 8 goes to the smaller)
		{7, 2, true, 4096, 8},  // nearest: 8, where pulling wins from the first size
		{2, 8, true, 0, 2},     // more processors than ranks: the unsubscribed pass
		{16, 32, true, 0, 2},   // likewise
		{3, 1, true, 0, 2 + 2}, // 3 on 1: oversubscribed, nearest of 4 and 8 is 4
		{2, 1, true, 0, 2 + 2}, // 2 on 1: oversubscribed too
		{64, 64, true, 0, 2},   // as many as processors: not oversubscribed
	}
	for _, tc := range tests {
		at, ok := tr.CollPull(tc.ranks, tc.cpus)
		if ok != tc.ok || at.Ranks != tc.sampled {
			t.Errorf("%d ranks on %d cpus: %+v %v, want the pass of %d ranks", tc.ranks, tc.cpus, at, ok, tc.sampled)
			continue
		}
		switch {
		case tc.sampled == 4 && (at.From <= 4096 || at.From >= 16384):
			t.Errorf("%d ranks on %d cpus: pull from %d, want between the 4K and 16K samples", tc.ranks, tc.cpus, at.From)
		case tc.sampled != 4 && at.From != tc.from:
			t.Errorf("%d ranks on %d cpus: pull from %d, want %d", tc.ranks, tc.cpus, at.From, tc.from)
		}
	}
	if _, ok := (&Transport{NodeCPUs: 2, Node: map[string]map[string]Curve{"4": tr.Node["4"]}}).CollPull(2, 2); ok {
		t.Error("no pass without oversubscription, yet a crossing for 2 ranks on 2 cpus")
	}
	if got := (NodePullAt{Ranks: 2, CPUs: 2}).String(); !strings.HasPrefix(got, "never") {
		t.Errorf("String() = %q", got)
	}
}

// TestValidateNode: node passes with bad keys, processor counts or curves
// are refused.
func TestValidateNode(t *testing.T) {
	good := map[string]Curve{NodeRing: nodeCurve(1, 2), NodePull: nodeCurve(1, 2)}
	for _, tc := range []struct {
		name string
		tr   Transport
	}{
		{"key not a number", Transport{NodeCPUs: 2, Node: map[string]map[string]Curve{"four": good}}},
		{"one rank", Transport{NodeCPUs: 2, Node: map[string]map[string]Curve{"1": good}}},
		{"leading zero", Transport{NodeCPUs: 2, Node: map[string]map[string]Curve{"04": good}}},
		{"no processors", Transport{Node: map[string]map[string]Curve{"4": good}}},
		{"bad curve", Transport{NodeCPUs: 2, Node: map[string]map[string]Curve{"4": {NodeRing: {{Size: 0, Median: 1, P25: 1, P75: 1, Reps: 1}}}}}},
	} {
		p := &Profile{Version: Version, Transports: map[string]*Transport{"shm": &tc.tr}}
		if err := p.Validate(); err == nil {
			t.Errorf("%s: valid", tc.name)
		}
	}
}

// TestCollPullMiddle: where pulling wins only between two sizes, the range
// is bounded on both sides.
func TestCollPullMiddle(t *testing.T) {
	tr := &Transport{NodeCPUs: 2, Node: map[string]map[string]Curve{
		"4": {NodeRing: nodeCurve(10, 40, 100, 300), NodePull: nodeCurve(20, 30, 80, 400)},
	}}
	at, ok := tr.CollPull(4, 2)
	if !ok || at.From <= 4096 || at.From >= 16384 || at.To <= 65536 || at.To >= 262144 {
		t.Fatalf("%+v %v: want a range from between 4K and 16K to between 64K and 256K", at, ok)
	}
	for size, want := range map[int64]bool{4096: false, 16384: true, 65536: true, 262144: false} {
		if at.Pulls(size) != want {
			t.Errorf("Pulls(%d) = %v, want %v", size, !want, want)
		}
	}
	if !strings.Contains(at.String(), "up to") {
		t.Errorf("String() = %q: no upper bound said", at.String())
	}
}
