package job

import (
	"errors"
	"fmt"

	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/profile"
)

// loadProfile returns the profile this job runs on, or nil and the line
// that tells the user why it runs on the defaults ("" when they asked).
func loadProfile(cfg config.Config) (*profile.Profile, string) {
	if cfg.Profile == config.ProfileOff {
		return nil, ""
	}
	fp := cfg.Platform()
	path, err := cfg.ProfilePath(fp)
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
