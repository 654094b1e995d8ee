package commtune

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/profile"
)

func init() {
	control.Platform = func() (profile.Fingerprint, string, error) {
		cfg, err := buildConfig(nil)
		if err != nil {
			return profile.Fingerprint{}, "", err
		}
		fp := platform(cfg)
		path, err := profilePath(cfg, fp)
		return fp, path, err
	}
	control.PlanFor = nominalPlan
}

// platform returns this machine's fingerprint. The transports it names are
// those present and how they are set up, not the ones a job selects, so a
// pass that samples them one at a time and a job that uses both agree.
func platform(cfg Config) profile.Fingerprint {
	var ts []string
	if runtime.GOOS == "linux" {
		ts = append(ts, "shm")
	}
	ts = append(ts, "tcp rails="+strings.Join(railIdentities(cfg.Rails), ","))
	return profile.Machine(ts)
}

// profilePath is where this platform's profile lives under cfg.
func profilePath(cfg Config, fp profile.Fingerprint) (string, error) {
	return profile.Path(fp, func(k string) string {
		if k == profile.EnvPath {
			return cfg.Profile
		}
		return os.Getenv(k)
	})
}

// loadProfile returns the profile this job runs on, or nil and the line
// that tells the user why it runs on the defaults ("" when they asked).
func loadProfile(cfg Config) (*profile.Profile, string) {
	if cfg.Profile == ProfileOff {
		return nil, ""
	}
	fp := platform(cfg)
	path, err := profilePath(cfg, fp)
	if err != nil {
		return nil, fmt.Sprintf("commtune: no tuning profile (%v); running on defaults", err)
	}
	p, err := profile.Load(path, fp)
	switch {
	case err == nil:
		return p, ""
	case profile.IsMissing(err):
		return nil, fmt.Sprintf("commtune: no tuning profile for this machine at %s; running on defaults (run `commtune sample` to measure it)", path)
	case errors.Is(err, profile.ErrForeign):
		return nil, fmt.Sprintf("commtune: ignoring %v; running on defaults (run `commtune sample` to measure this machine)", err)
	}
	return nil, fmt.Sprintf("commtune: ignoring %v; running on defaults (run `commtune sample` to replace it)", err)
}
