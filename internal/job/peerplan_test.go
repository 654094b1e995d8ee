package job

import (
	"fmt"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sched"
	"github.com/commtune/commtune/internal/topo"
)

// twoRailProfile has tcp curves for the rails eth1/ipv4 and eth2/ipv4.
func twoRailProfile() *profile.Profile {
	curve := profile.Curve{{Size: 8 << 10, Median: 2e5, P25: 2e5, P75: 2e5, Reps: 1},
		{Size: 1 << 20, Median: 1e7, P25: 1e7, P75: 1e7, Reps: 1}}
	return &profile.Profile{Transports: map[string]*profile.Transport{
		"tcp": {Rails: map[string]profile.Curve{"eth1/ipv4": curve, "eth2/ipv4": curve}}}}
}

// TestPlanPeer: one function gives a peer its policy and its scheduling
// from its facts, the profile and the configuration's overrides.
func TestPlanPeer(t *testing.T) {
	shmRail := func(single bool, names ...string) driver.Caps {
		var methods []driver.Method
		for _, n := range names {
			m, _ := driver.MethodNamed(n)
			methods = append(methods, m)
		}
		return driver.Caps{Transport: "shm", Local: true, SingleCopy: single, Methods: methods}
	}
	tcp2 := []driver.Caps{{Transport: "tcp", Name: "eth1/ipv4"}, {Transport: "tcp", Name: "eth2/ipv4"}}
	for _, tc := range []struct {
		name     string
		prof     *profile.Profile
		facts    peerFacts
		cfg      config.Config
		large    string // Policy.Large as "method from size"
		rndv     int
		strategy string
	}{
		{"tcp defaults", nil, peerFacts{transport: "tcp", rails: tcp2[:1]}, config.Config{}, "", 64 << 10, "default"},
		{"tcp override", nil, peerFacts{transport: "tcp", rails: tcp2[:1]}, config.Config{RendezvousThreshold: 4096}, "", 4096, "default"},
		{"tcp two sampled rails", twoRailProfile(), peerFacts{transport: "tcp", rails: tcp2}, config.Config{Split: config.SplitCurves}, "", 64 << 10, "split"},
		{"shm, no shared cache, CMA", nil, peerFacts{transport: "shm", rails: []driver.Caps{shmRail(true, "copy", "cachefree")}, canPull: true, sharing: topo.SharingNone},
			config.Config{Shm: config.ShmConfig{Method: "auto"}}, "pull from 16385", config.DefaultShmEager, "default"},
		{"shm, the engine cannot pull", nil, peerFacts{transport: "shm", rails: []driver.Caps{shmRail(true, "copy")}, sharing: topo.SharingNone},
			config.Config{Shm: config.ShmConfig{Method: "auto"}}, "copy from 16385", config.DefaultShmEager, "default"},
		{"shm, cachefree only where every rail has it", nil, peerFacts{transport: "shm",
			rails: []driver.Caps{shmRail(false, "copy", "cachefree"), shmRail(false, "copy")}, dmaMin: 1 << 20},
			config.Config{Shm: config.ShmConfig{Method: "auto"}, Split: config.SplitCurves}, "copy from 16385", config.DefaultShmEager, "split"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := planPeer(tc.prof, tc.facts, tc.cfg, aggregationFor(tc.prof, tc.facts.transport, tc.cfg))
			if g := largeText(pl.Policy); g != tc.large || pl.Policy.Rendezvous != tc.rndv || pl.Strategy.Name() != tc.strategy {
				t.Fatalf("Large %q, rendezvous %d, strategy %s; want %q, %d, %s", g, pl.Policy.Rendezvous, pl.Strategy.Name(), tc.large, tc.rndv, tc.strategy)
			}
		})
	}
}

// TestNominalPlan: what `commtune info` shows is planPeer for a peer as a
// job here would see it, environment overrides included; tcp rails come
// from the profile when none are configured.
func TestNominalPlan(t *testing.T) {
	t.Setenv(config.EnvRails, "")
	pl, err := PlanFor(twoRailProfile(), "tcp")
	if err != nil {
		t.Fatal(err)
	}
	if pl.Strategy != "split" {
		t.Errorf("tcp with two sampled rails: strategy %s, want split (%q)", pl.Strategy, pl.Why)
	}
	t.Setenv(config.EnvSplit, config.SplitOff)
	if pl, err = PlanFor(twoRailProfile(), "tcp"); err != nil || pl.Strategy != "default" {
		t.Errorf("%s=off: strategy %s (%v), want default", config.EnvSplit, pl.Strategy, err)
	}
	t.Setenv(config.EnvShmEager, "4096")
	if pl, err = PlanFor(nil, "shm"); err != nil || pl.Policy.Rendezvous != 4096 {
		t.Errorf("%s=4096: shm eager limit %d (%v)", config.EnvShmEager, pl.Policy.Rendezvous, err)
	}
	if _, err := PlanFor(nil, "ib"); err == nil {
		t.Error("an unknown transport gave a plan")
	}
	t.Setenv(config.EnvShmEager, "lots")
	if _, err := PlanFor(nil, "shm"); err == nil {
		t.Errorf("%s=lots gave a plan", config.EnvShmEager)
	}
}

// TestSchedulingFor: the strategy and models a peer gets from its rails,
// the profile and the configuration.
func TestSchedulingFor(t *testing.T) {
	prof := twoRailProfile()
	two := []driver.Caps{{Transport: "tcp", Name: "eth1/ipv4"}, {Transport: "tcp", Name: "eth2/ipv4"}}
	other := []driver.Caps{{Transport: "tcp", Name: "eth1/ipv4"}, {Transport: "tcp", Name: "ib0/ipv4"}}
	for _, tc := range []struct {
		name     string
		prof     *profile.Profile
		rails    []driver.Caps
		cfg      config.Config
		strategy string
		models   int    // rails with a model
		why      string // in Why
	}{
		{"one rail", prof, two[:1], config.Config{Split: config.SplitCurves}, "default", 0, "aggregation off"},
		{"one rail, aggregation", prof, two[:1], config.Config{Split: config.SplitCurves, Aggregation: 512}, "aggregate", 0, "below 512 bytes"},
		{"two rails sampled", prof, two, config.Config{Split: config.SplitCurves}, "split", 2, "large messages split (curves)"},
		{"weighted", prof, two, config.Config{Split: config.SplitWeighted}, "split/weighted", 2, "split (weighted)"},
		{"a rail not sampled", prof, other, config.Config{Split: config.SplitCurves}, "split", 0, "no sampled curve for ib0/ipv4"},
		{"no profile, iso", nil, two, config.Config{Split: config.SplitIso}, "split/iso", 0, "split (iso)"},
		{"split off", prof, two, config.Config{Split: config.SplitOff}, "default", 0, "COMMTUNE_SPLIT=off"},
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

// TestShmPolicyRule checks seed 004 §4.1's rule as applied without a
// profile: cma when the ranks share no cache (and CMA works), copy when
// they share one or the topology cannot tell, cachefree from DMA_min.
func TestShmPolicyRule(t *testing.T) {
	methods := []string{"copy", "cachefree", "vmsplice"}
	tests := []struct {
		name   string
		method string
		peer   shmPeer
		want   string // Large, as "method from size"
	}{
		{"shared cache", "auto", shmPeer{canPull: true, methods: methods, sharing: topo.SharingCache, dmaMin: 8 << 20},
			"copy from 16385, cachefree from 8388608"},
		{"no shared cache", "auto", shmPeer{canPull: true, methods: methods, sharing: topo.SharingNone, dmaMin: 2 << 20},
			"pull from 16385, cachefree from 2097152"},
		{"sharing unknown (this VM: L3 a total)", "auto", shmPeer{canPull: true, methods: methods, sharing: topo.SharingUnknown, dmaMin: 512 << 10},
			"copy from 16385, cachefree from 524288"},
		{"no cache known at all", "auto", shmPeer{canPull: true, methods: methods, sharing: topo.SharingUnknown},
			"copy from 16385"},
		{"no shared cache, CMA forbidden", "auto", shmPeer{methods: methods, sharing: topo.SharingNone, dmaMin: 2 << 20},
			"copy from 16385, cachefree from 2097152"},
		{"DMA_min below the eager limit", "auto", shmPeer{canPull: true, methods: methods, sharing: topo.SharingCache, dmaMin: 4 << 10},
			"copy from 16385, cachefree from 16385"},
		{"cma forced", "cma", shmPeer{canPull: true, methods: methods, sharing: topo.SharingCache, dmaMin: 8 << 20},
			"pull from 16385"},
		{"copy forced", "copy", shmPeer{canPull: true, methods: methods, sharing: topo.SharingNone, dmaMin: 8 << 20},
			"copy from 16385"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Config{Shm: config.ShmConfig{Method: tc.method}}
			p, _, _ := shmPolicy(&cfg, tc.peer, nil)
			if g := largeText(p); g != tc.want {
				t.Fatalf("Large = %s, want %s", g, tc.want)
			}
		})
	}
}

// largeText prints p.Large as "method from size, …".
func largeText(p core.Policy) string {
	var out []string
	for _, l := range p.Large {
		out = append(out, fmt.Sprintf("%s from %d", l.Method, l.Min))
	}
	return strings.Join(out, ", ")
}
