package config

import (
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"

	"github.com/commtune/commtune/internal/netif"
	"github.com/commtune/commtune/internal/profile"
)

// Platform returns this machine's fingerprint under c. The transports it
// names are those present and how they are set up, not the ones a job
// selects, so a pass that samples them one at a time and a job that uses
// both agree.
func (c *Config) Platform() profile.Fingerprint {
	var ts []string
	if runtime.GOOS == "linux" {
		ts = append(ts, "shm")
	}
	ts = append(ts, "tcp rails="+strings.Join(RailIdentities(c.Rails), ","))
	return profile.Machine(ts)
}

// ProfilePath is where platform fp's profile lives under c: Config.Profile,
// else the cache directory.
func (c *Config) ProfilePath(fp profile.Fingerprint) (string, error) {
	return profile.Path(fp, func(k string) string {
		if k == profile.EnvPath {
			return c.Profile
		}
		return os.Getenv(k)
	})
}

// TuneStatePath returns where platform fp's lottery state lives under c,
// or "" when c turns persistence off. By default it is next to the
// profile, named by the same fingerprint: <profile without .json>.tune.json.
func (c *Config) TuneStatePath(fp profile.Fingerprint) (string, error) {
	switch c.TuneState {
	case TuneStateOff:
		return "", nil
	case "":
	default:
		return c.TuneState, nil
	}
	return c.besideProfile(fp, ".tune.json")
}

// HaloStatePath returns where platform fp's halo decisions live under c,
// or "" when c turns persistence off: Config.HaloState, else next to the
// profile, <profile without .json>.halo.json.
func (c *Config) HaloStatePath(fp profile.Fingerprint) (string, error) {
	switch c.HaloState {
	case HaloStateOff:
		return "", nil
	case "":
	default:
		return c.HaloState, nil
	}
	return c.besideProfile(fp, ".halo.json")
}

// besideProfile is the profile's default path with suffix for .json: a
// job that reads no profile keeps its state where the profile would be.
func (c *Config) besideProfile(fp profile.Fingerprint, suffix string) (string, error) {
	d := *c
	if d.Profile == ProfileOff {
		d.Profile = ""
	}
	p, err := d.ProfilePath(fp)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(p, ".json") + suffix, nil
}

// RailIdentities names configured rails for the platform fingerprint
// (interface and family, as driver.Caps.Name); "auto" when none is set.
func RailIdentities(rails []string) []string {
	if len(rails) == 0 {
		return []string{"auto"}
	}
	out := make([]string, len(rails))
	for i, r := range rails {
		host := r
		if h, _, err := net.SplitHostPort(r); err == nil {
			host = h
		}
		if a, err := netip.ParseAddr(host); err == nil {
			if it, err := netif.ByAddr(a); err == nil {
				out[i] = it.Identity()
				continue
			}
		} else if it, err := netif.ByName(host); err == nil {
			out[i] = it.Identity()
			continue
		}
		out[i] = host
	}
	return out
}
