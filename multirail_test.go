package commtune

import (
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sched"
)

// TestSchedulingFor: the strategy and models a peer gets from its rails,
// the profile and the configuration.
func TestSchedulingFor(t *testing.T) {
	curve := profile.Curve{{Size: 8 << 10, Median: 2e5, P25: 2e5, P75: 2e5, Reps: 1},
		{Size: 1 << 20, Median: 1e7, P25: 1e7, P75: 1e7, Reps: 1}}
	prof := &profile.Profile{Transports: map[string]*profile.Transport{
		"tcp": {Rails: map[string]profile.Curve{"eth1/ipv4": curve, "eth2/ipv4": curve}}}}
	two := []driver.Caps{{Transport: "tcp", Name: "eth1/ipv4"}, {Transport: "tcp", Name: "eth2/ipv4"}}
	other := []driver.Caps{{Transport: "tcp", Name: "eth1/ipv4"}, {Transport: "tcp", Name: "ib0/ipv4"}}
	for _, tc := range []struct {
		name     string
		prof     *profile.Profile
		rails    []driver.Caps
		cfg      Config
		strategy string
		models   int    // rails with a model
		why      string // in Why
	}{
		{"one rail", prof, two[:1], Config{Split: SplitCurves}, "default", 0, "aggregation off"},
		{"one rail, aggregation", prof, two[:1], Config{Split: SplitCurves, Aggregation: 512}, "aggregate", 0, "below 512 bytes"},
		{"two rails sampled", prof, two, Config{Split: SplitCurves}, "split", 2, "large messages split (curves)"},
		{"weighted", prof, two, Config{Split: SplitWeighted}, "split/weighted", 2, "split (weighted)"},
		{"a rail not sampled", prof, other, Config{Split: SplitCurves}, "split", 0, "no sampled curve for ib0/ipv4"},
		{"no profile, iso", nil, two, Config{Split: SplitIso}, "split/iso", 0, "split (iso)"},
		{"split off", prof, two, Config{Split: SplitOff}, "default", 0, "COMMTUNE_SPLIT=off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := schedulingFor(tc.prof, "tcp", tc.rails, tc.cfg, aggregationFor(tc.prof, "tcp", tc.cfg))
			n := 0
			for _, m := range ps.Models {
				if m != nil {
					n++
				}
			}
			if ps.Strategy.Name() != tc.strategy || n != tc.models || !strings.Contains(strings.Join(ps.Why, "; "), tc.why) {
				t.Fatalf("strategy %s, %d models, why %q; want %s, %d, %q", ps.Strategy.Name(), n, ps.Why, tc.strategy, tc.models, tc.why)
			}
			if s, ok := ps.Strategy.(sched.Split); ok && tc.cfg.Aggregation > 0 && s.Aggregate != 2*tc.cfg.Aggregation {
				t.Fatalf("split aggregates %d", s.Aggregate)
			}
		})
	}
}
