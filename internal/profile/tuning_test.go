package profile

import (
	"slices"
	"testing"
)

// testProfile is a two-transport profile whose curves are straight lines
// with crossings computed by hand (see TestTune).
func testProfile() *Profile {
	line := func(a, b float64) func(float64) float64 { return func(x float64) float64 { return a + b*x } }
	eager := logSizes(1, 512<<10)
	all := logSizes(1, 16<<20)
	pairs := logSizes(1, 256<<10)
	tcp := &Transport{MaxEager: 512 << 10, Methods: map[string]Curve{
		EagerCopy:  curve(eager, line(5000, 0.5)),
		EagerIovec: curve(eager, line(5200, 0.3)),
		Rendezvous: curve(all, line(15000, 0.25)),
		Aggregated: curve(pairs, line(6000, 1.1)),
		TwoPackets: curve(pairs, line(9000, 1.0)),
	}}
	shm := &Transport{MaxEager: 512 << 10, Methods: map[string]Curve{
		EagerCopy:                  curve(eager, line(300, 0.05)),
		EagerIovec:                 curve(eager, line(300, 0.05)),
		RendezvousVia("copy"):      curve(all, line(2000, 1.0/30)),
		RendezvousVia("cma"):       curve(all, line(8000, 1.0/35)),
		RendezvousVia("cachefree"): curve(all, line(12000, 1.0/40)),
	}}
	fp := Fingerprint{CPU: "test", CPUs: 2, Caches: "L3 32M×1", Kernel: "6.1", Go: "go1.26", Transports: []string{"shm", "tcp rails=1"}}
	fp.ID = fp.Sum()
	return &Profile{Version: Version, Fingerprint: fp, Transports: map[string]*Transport{"tcp": tcp, "shm": shm}}
}

func TestTune(t *testing.T) {
	p := testProfile()
	// tcp, by hand:
	//   iovec: 5000 + x/2 = 5200 + 0.3x at x = 1000;
	//   rendezvous: against eager-iovec, 5200 + 0.3x = 15000 + x/4 at
	//   x = 196000, so the largest eager message is 195999;
	//   aggregation: 6000 + 1.1x = 9000 + x at x = 30000.
	tu, err := p.Tune("tcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tu.Iovec != 1000 || tu.Rendezvous != 195999 || tu.Aggregation != 30000 || len(tu.Large) != 0 {
		t.Fatalf("tcp: %v", tu)
	}

	// shm: eager (300 + x/20) meets rendezvous by copy (2000 + x/30) at
	// x = 102000, the eager limit + 1. Above it cachefree (12000 + x/40)
	// overtakes copy at 1200000 (x/120 = 10000); cma (8000 + x/35) is
	// never fastest then. Without cachefree, cma overtakes copy at 1260000
	// (x/210 = 6000).
	tests := []struct {
		available []string
		want      []Range
	}{
		{nil, []Range{{102000, RendezvousVia("copy")}, {1200000, RendezvousVia("cachefree")}}},
		{[]string{"copy", "cma"}, []Range{{102000, RendezvousVia("copy")}, {1260000, RendezvousVia("cma")}}},
		{[]string{"copy"}, []Range{{102000, RendezvousVia("copy")}}},
	}
	for _, tc := range tests {
		tu, err := p.Tune("shm", tc.available)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tu.Large, tc.want) || tu.Rendezvous != 101999 {
			t.Errorf("shm with %v: large %v, eager up to %d; want %v, eager up to 101999", tc.available, tu.Large, tu.Rendezvous, tc.want)
		}
	}

	if _, err := p.Tune("inproc", nil); err == nil {
		t.Error("tuned a transport without samples")
	}
}
