package job

import (
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/profile"
)

// TestCollPullFor: the setting wins, then the profile's node pass, then
// the default; each says so.
func TestCollPullFor(t *testing.T) {
	curve := func(ns ...float64) profile.Curve {
		var c profile.Curve
		for i, v := range ns {
			c = append(c, profile.Sample{Size: 4096 << (2 * i), Median: v, P25: v, P75: v, Reps: 3})
		}
		return c
	}
	prof := &profile.Profile{Transports: map[string]*profile.Transport{"shm": {NodeCPUs: 2, Node: map[string]map[string]profile.Curve{
		"4": {profile.NodeRing: curve(10, 20, 40), profile.NodePull: curve(5, 10, 20)},
	}}}}
	tests := []struct {
		name        string
		set         int
		prof        *profile.Profile
		ranks, cpus int
		want        profile.NodePullAt
		why         string
	}{
		{"set", 64 << 10, prof, 4, 2, profile.NodePullAt{From: 64 << 10}, "set"},
		{"set off", -1, prof, 4, 2, profile.NodePullAt{}, "set"},
		{"profile", 0, prof, 4, 2, profile.NodePullAt{From: 4096, Ranks: 4, CPUs: 2}, "profile"},
		{"profile has no pass on this side", 0, prof, 2, 2, profile.NodePullAt{}, "default: never"},
		{"no profile, oversubscribed", 0, nil, 4, 2, profile.NodePullAt{From: config.DefaultCollPull}, "default: from 16K"},
		{"no profile", 0, nil, 2, 2, profile.NodePullAt{}, "default: never"},
	}
	for _, tc := range tests {
		cfg := config.Config{CollPull: tc.set}
		cfg.DefaultSpin(tc.ranks, tc.cpus)
		got, why := CollPullFor(cfg, tc.prof, tc.ranks, tc.cpus)
		if got != tc.want || !strings.HasPrefix(why, tc.why) {
			t.Errorf("%s: %+v (%s), want %+v (%s…)", tc.name, got, why, tc.want, tc.why)
		}
	}
}
