package tune

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"
)

// A decisions file keeps the winners of application-level selections
// (Adaptive) between jobs, one per key — for a halo exchange, the topology
// and the array's shape — so that a rerun starts on the winner without
// exploring:
//
//	{"format": "commtune-decisions/1",
//	 "platform": "<the platform fingerprint's id>",
//	 "decisions": {"halo/np=8/dims=2x2x2/periods=ttt/...": {
//	     "winner": "IsendIrecv_aao_pack", "seconds": 0.00012,
//	     "method": "brute", "calls": 200, "selections": 1,
//	     "means": {"IsendIrecv_aao_pack": 0.00012, ...},
//	     "explain": ["..."], "at": "2026-11-24T10:00:00Z"}}}
//
// Like the lottery's state file it is refused whole when of another
// format or platform, written by rename under a lock, and a decision
// replaces the key's previous one (a choice is not an average).
const DecisionsFormat = "commtune-decisions/1"

// Decision is one persisted selection.
type Decision struct {
	Winner     string             `json:"winner"`
	Seconds    float64            `json:"seconds"` // the winner's reduced time when chosen
	Method     string             `json:"method"`
	Calls      int                `json:"calls"`      // calls the selection measured
	Selections int                `json:"selections"` // selections in the job that chose it
	Means      map[string]float64 `json:"means,omitempty"`
	Explain    []string           `json:"explain,omitempty"`
	At         time.Time          `json:"at"`
}

type decisionsFile struct {
	Format    string              `json:"format"`
	Platform  string              `json:"platform"`
	Decisions map[string]Decision `json:"decisions"`
}

// check refuses a decision no selection could have made.
func (d Decision) check(key string) error {
	if key == "" || d.Winner == "" {
		return fmt.Errorf("%w: decision %q without a key or winner", ErrBadState, key)
	}
	if !(d.Seconds > 0) || math.IsInf(d.Seconds, 1) {
		return fmt.Errorf("%w: decision %q at %g s", ErrBadState, key, d.Seconds)
	}
	for name, s := range d.Means {
		if !validTime(s) {
			return fmt.Errorf("%w: decision %q: %s at %g s", ErrBadState, key, name, s)
		}
	}
	return nil
}

// ParseDecisions decodes a decisions file's bytes learned on platform.
// The error wraps ErrForeignState for another format or platform and
// ErrBadState for anything else wrong.
func ParseDecisions(data []byte, platform string) (map[string]Decision, error) {
	var f decisionsFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadState, err)
	}
	if f.Format != DecisionsFormat {
		return nil, fmt.Errorf("%w: format %q, want %q", ErrForeignState, f.Format, DecisionsFormat)
	}
	if f.Platform != platform {
		return nil, fmt.Errorf("%w: learned on platform %q, this is %q", ErrForeignState, f.Platform, platform)
	}
	for k, d := range f.Decisions {
		if err := d.check(k); err != nil {
			return nil, err
		}
	}
	if f.Decisions == nil {
		f.Decisions = map[string]Decision{}
	}
	return f.Decisions, nil
}

// LoadDecisions reads the decisions file at path. A missing file is no
// decision and no error.
func LoadDecisions(path, platform string) (map[string]Decision, error) {
	data, err := readState(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Decision{}, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := ParseDecisions(data, platform)
	if err != nil {
		return nil, fmt.Errorf("tune: decisions %s: %w", path, err)
	}
	return m, nil
}

// SaveDecision records d under key in the file at path, keeping the other
// keys, under the file's lock. A file that cannot be parsed is replaced;
// one of another format or platform is left alone and reported.
func SaveDecision(path, platform, key string, d Decision) error {
	if err := d.check(key); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("tune: decisions %s: %w", path, err)
	}
	unlock, err := lockFile(path+".lock", lockTimeout)
	if err != nil {
		return fmt.Errorf("tune: decisions %s: %w", path, err)
	}
	defer unlock()
	m, err := LoadDecisions(path, platform)
	switch {
	case errors.Is(err, ErrForeignState):
		return fmt.Errorf("%w; not overwritten", err)
	case err != nil:
		m = map[string]Decision{}
	}
	m[key] = d
	data, err := json.MarshalIndent(decisionsFile{Format: DecisionsFormat, Platform: platform, Decisions: m}, "", "  ")
	if err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	return writeAtomic(path, append(data, '\n'))
}
