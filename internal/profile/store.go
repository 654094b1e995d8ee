package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// EnvPath is the variable naming the profile file; "off" runs on the
// defaults without looking for one.
const EnvPath = "COMMTUNE_PROFILE"

// maxFileSize bounds what Load reads: a full profile is well under 1 MiB.
const maxFileSize = 16 << 20

// ErrForeign is wrapped when a profile describes another platform.
var ErrForeign = errors.New("profile sampled on another platform")

// Path returns where fp's profile lives: $COMMTUNE_PROFILE if set, else
// $XDG_CACHE_HOME/commtune/<id>.json, else ~/.cache/commtune/<id>.json.
func Path(fp Fingerprint, getenv func(string) string) (string, error) {
	if p := strings.TrimSpace(getenv(EnvPath)); p != "" {
		return p, nil
	}
	dir := getenv("XDG_CACHE_HOME")
	if dir == "" || !filepath.IsAbs(dir) { // the XDG spec ignores relative paths
		home := getenv("HOME")
		if home == "" {
			return "", fmt.Errorf("profile: neither XDG_CACHE_HOME nor HOME is set: set %s to a file path", EnvPath)
		}
		dir = filepath.Join(home, ".cache")
	}
	return filepath.Join(dir, "commtune", fp.ID+".json"), nil
}

// Load reads the profile at path and checks it describes the platform fp.
// A missing file is an error wrapping fs.ErrNotExist; a file sampled
// elsewhere wraps ErrForeign and names what differs; a malformed one wraps
// ErrInvalid. In every case the caller runs on its defaults.
func Load(path string, fp Fingerprint) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("profile %s: %w: larger than %d bytes", path, ErrInvalid, maxFileSize)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	if p.Fingerprint.ID != fp.ID {
		diff := p.Fingerprint.Diff(fp)
		if len(diff) == 0 {
			diff = []string{"id " + p.Fingerprint.ID + " → " + fp.ID}
		}
		return nil, fmt.Errorf("profile %s: %w (%s)", path, ErrForeign, strings.Join(diff, "; "))
	}
	return p, nil
}

// Parse decodes and validates a profile. The fingerprint's ID must match
// its fields: a hand-edited platform description is not trusted.
func Parse(data []byte) (*Profile, error) {
	var p Profile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the profile", ErrInvalid)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Fingerprint.ID != p.Fingerprint.Sum() {
		return nil, fmt.Errorf("%w: fingerprint id %q does not match its fields", ErrInvalid, p.Fingerprint.ID)
	}
	return &p, nil
}

// Save writes p to path atomically: to a temporary file in the same
// directory, synced, then renamed over path, so that a reader (or a crash,
// or Ctrl-C) never sees half a profile.
func (p *Profile) Save(path string) error {
	if err := p.Validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".profile-*.tmp")
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("profile: writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil { // make the rename durable
		d.Sync()
		d.Close()
	}
	return nil
}

// IsMissing reports whether err means there is no profile file.
func IsMissing(err error) bool { return errors.Is(err, fs.ErrNotExist) }
