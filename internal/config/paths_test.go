package config

import (
	"path/filepath"
	"testing"

	"github.com/commtune/commtune/internal/profile"
)

func TestTuneStatePath(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	fp := profile.Fingerprint{ID: "f00d"}
	def := filepath.Join(cache, "commtune", "f00d.tune.json")
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"next to the default profile", Config{}, def},
		{"next to the default profile when it is off", Config{Profile: ProfileOff}, def},
		{"next to a profile set", Config{Profile: "/p/machine.json"}, "/p/machine.tune.json"},
		{"a profile not named .json", Config{Profile: "/p/machine.prof"}, "/p/machine.prof.tune.json"},
		{"set", Config{TuneState: "/q/jobs.json", Profile: "/p/machine.json"}, "/q/jobs.json"},
		{"off", Config{TuneState: TuneStateOff}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cfg.TuneStatePath(fp)
			if err != nil || got != tc.want {
				t.Fatalf("TuneStatePath = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestHaloStatePath: the halo decisions live next to the profile unless
// HaloState names a file or turns them off.
func TestHaloStatePath(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	fp := profile.Fingerprint{ID: "f00d"}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"next to the default profile", Config{}, filepath.Join(cache, "commtune", "f00d.halo.json")},
		{"next to a profile set", Config{Profile: "/p/machine.json"}, "/p/machine.halo.json"},
		{"set", Config{HaloState: "/q/halo.json"}, "/q/halo.json"},
		{"off", Config{HaloState: HaloStateOff}, ""},
	} {
		if got, err := tc.cfg.HaloStatePath(fp); err != nil || got != tc.want {
			t.Errorf("%s: HaloStatePath = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
