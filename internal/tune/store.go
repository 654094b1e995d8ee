package tune

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// A state file holds one platform's State between jobs (seed 001 §6.1.3:
// read at start, written back at exit), as JSON:
//
//	{"format": "commtune-tune/1",
//	 "platform": "<the platform fingerprint's id>",
//	 "keys": {"allreduce/ranks=8/size=2^16/commutative/shm":
//	           {"ring": {"avg_s": 0.0012, "var_s2": 1e-9, "calls": 40}}}}
//
// The platform is a parameter of LoadState, ParseState and SaveState
// rather than a field of State: a State is what a Lottery learned, the
// platform is where, and only the file needs to say it. A file of another
// format or platform is refused, never merged: times measured elsewhere
// would mislead the lottery.
const StateFormat = "commtune-tune/1"

var (
	// ErrBadState is wrapped when a state file is not valid JSON of
	// StateFormat or holds a negative or non-finite measurement.
	ErrBadState = errors.New("invalid tuning state")
	// ErrForeignState is wrapped when a state file is of another format
	// or was learned on another platform.
	ErrForeignState = errors.New("tuning state of another format or platform")
)

// maxStateSize bounds what LoadState reads: thousands of keys take well
// under 1 MiB.
const maxStateSize = 16 << 20

// lockTimeout bounds how long SaveState waits for another job's save, which
// holds the lock for one read and one write of a small file: a holder that
// long is stopped or hung, and a job's exit should not hang with it.
const lockTimeout = 10 * time.Second

// stateFile is the file's JSON.
type stateFile struct {
	Format   string                   `json:"format"`
	Platform string                   `json:"platform"`
	Keys     map[Key]map[string]Stats `json:"keys"`
}

// ParseState decodes a state file's bytes and checks they were learned on
// platform. The error, one line, wraps ErrForeignState for another format
// or platform and ErrBadState for anything else wrong.
func ParseState(data []byte, platform string) (State, error) {
	// The header first, so that a file of another format is refused as
	// foreign even if its keys would not parse.
	var head struct {
		Format   *string `json:"format"`
		Platform string  `json:"platform"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return State{}, fmt.Errorf("%w: %v", ErrBadState, err)
	}
	switch {
	case head.Format == nil:
		return State{}, fmt.Errorf("%w: no format field, want %q", ErrBadState, StateFormat)
	case *head.Format != StateFormat:
		return State{}, fmt.Errorf("%w: format %q, want %q", ErrForeignState, *head.Format, StateFormat)
	case head.Platform != platform:
		return State{}, fmt.Errorf("%w: learned on platform %q, this is %q", ErrForeignState, head.Platform, platform)
	}
	var f stateFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return State{}, fmt.Errorf("%w: %v", ErrBadState, err)
	}
	if dec.More() {
		return State{}, fmt.Errorf("%w: data after the state", ErrBadState)
	}
	for k, m := range f.Keys {
		for name, st := range m {
			if err := st.check(); err != nil {
				return State{}, fmt.Errorf("%w: %s %q: %v", ErrBadState, k, name, err)
			}
		}
	}
	return State{Keys: f.Keys}, nil
}

// MarshalState encodes s as a state file learned on platform, which
// ParseState reads back.
func MarshalState(s State, platform string) ([]byte, error) {
	keys := s.Keys
	if keys == nil {
		keys = map[Key]map[string]Stats{}
	}
	data, err := json.MarshalIndent(stateFile{Format: StateFormat, Platform: platform, Keys: keys}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("tune: %w", err)
	}
	return append(data, '\n'), nil
}

// LoadState reads the state file at path, learned on platform. A missing
// file is no error: it is an empty State, what a first job starts from.
// Any other failure is one line naming path and wrapping ErrBadState,
// ErrForeignState or the I/O error.
func LoadState(path, platform string) (State, error) {
	data, err := readState(path)
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, nil
	}
	if err != nil {
		return State{}, err
	}
	s, err := ParseState(data, platform)
	if err != nil {
		return State{}, fmt.Errorf("tune: state %s: %w", path, err)
	}
	return s, nil
}

// readState reads at most maxStateSize bytes of path.
func readState(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStateSize+1))
	if err != nil {
		return nil, fmt.Errorf("tune: state %s: %w", path, err)
	}
	if len(data) > maxStateSize {
		return nil, fmt.Errorf("tune: state %s: %w: larger than %d bytes", path, ErrBadState, maxStateSize)
	}
	return data, nil
}

// SaveState writes back to path what a job learned on platform: mine, its
// Snapshot at exit, less base, what it loaded at start, added to what the
// file holds now (Update), so that jobs sharing the file lose none of each
// other's learning and count none of it twice.
//
// Saves are serialized by an exclusive flock on path+".lock", a file of
// its own that is never removed (removing it would let two saves lock two
// different files); the state file itself is replaced by a rename, so
// LoadState, which takes no lock, reads either the old file or the new one,
// never half of one. SaveState waits at most lockTimeout for the lock.
//
// A current file that cannot be parsed is replaced by mine whole, and
// SaveState returns nil: the corrupt data is lost either way, and base's
// samples, no longer in the file, are then counted once. A file of another
// format or platform is left alone and SaveState returns an error wrapping
// ErrForeignState: it is somebody else's learning. When mine holds nothing
// new since base, a valid file is not rewritten.
func SaveState(path, platform string, base, mine State) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tune: state %s: %w", path, err)
	}
	unlock, err := lockFile(path+".lock", lockTimeout)
	if err != nil {
		return fmt.Errorf("tune: state %s: %w", path, err)
	}
	defer unlock()

	add := since(base, mine)
	var out State
	data, err := readState(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		out = add
	case errors.Is(err, ErrBadState): // too large to be ours
		out = mine
	case err != nil:
		return err
	default:
		file, err := ParseState(data, platform)
		switch {
		case errors.Is(err, ErrForeignState):
			return fmt.Errorf("tune: state %s: %w; not overwritten", path, err)
		case err != nil:
			out = mine
		case len(add.Keys) == 0:
			return nil
		default:
			out = Merge(file, add)
		}
	}
	data, err = MarshalState(out, platform)
	if err != nil {
		return err
	}
	return writeAtomic(path, data)
}

// writeAtomic writes data to path through a temporary file in the same
// directory, synced, then renamed over path, the way profile.Save does: a
// reader, a crash or Ctrl-C never sees half a file.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".tune-*.tmp")
	if err != nil {
		return fmt.Errorf("tune: state %s: %w", path, err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("tune: state %s: writing %s: %w", path, tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("tune: state %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("tune: state %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("tune: state %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("tune: state %s: %w", path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil { // make the rename durable
		d.Sync()
		d.Close()
	}
	return nil
}
