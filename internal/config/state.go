package config

import (
	"os"

	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/tune"
)

// FromEnv is the Config the environment sets, as Init builds it with no
// Options: what the tools report on and the files they read.
func FromEnv() (Config, error) { return Build(os.LookupEnv, nil) }

// Platform returns this machine's fingerprint and where its profile lives
// under the environment's settings (COMMTUNE_PROFILE, else the cache
// directory).
func Platform() (profile.Fingerprint, string, error) {
	c, err := FromEnv()
	if err != nil {
		return profile.Fingerprint{}, "", err
	}
	fp := c.Platform()
	path, err := c.ProfilePath(fp)
	return fp, path, err
}

// LotteryState returns the lottery's learning saved for this machine
// (COMMTUNE_TUNE_STATE, else next to the profile), loaded into a lottery
// with the environment's policy, and the file's path; a nil lottery with
// no error when persistence is off.
func LotteryState() (*tune.Lottery, string, error) {
	c, err := FromEnv()
	if err != nil {
		return nil, "", err
	}
	fp := c.Platform()
	path, err := c.TuneStatePath(fp)
	if err != nil || path == "" {
		return nil, path, err
	}
	l, err := tune.NewLottery(c.LotteryConfig())
	if err != nil {
		return nil, path, err
	}
	s, err := tune.LoadState(path, fp.ID)
	if err == nil {
		err = l.Restore(s)
	}
	return l, path, err
}

// HaloDecisions returns the winners of halo selections saved for this
// machine (COMMTUNE_HALO_STATE, else next to the profile) and the file's
// path; no decisions and an empty path when persistence is off.
func HaloDecisions() (map[string]tune.Decision, string, error) {
	c, err := FromEnv()
	if err != nil {
		return nil, "", err
	}
	fp := c.Platform()
	path, err := c.HaloStatePath(fp)
	if err != nil || path == "" {
		return nil, path, err
	}
	m, err := tune.LoadDecisions(path, fp.ID)
	return m, path, err
}
