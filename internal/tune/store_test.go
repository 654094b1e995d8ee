package tune

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/commtune/commtune/internal/fuzzseed"
)

const testPlatform = "0123abcd"

// validState is a state file of testPlatform holding ring for keyA.
const validState = `{"format": "commtune-tune/1", "platform": "0123abcd",
 "keys": {"allreduce/ranks=8/size=2^16/commutative/shm": {"ring": {"avg_s": 0.5, "var_s2": 0.01, "calls": 7}}}}`

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadState(t *testing.T) {
	ring := State{Keys: map[Key]map[string]Stats{keyA: {"ring": {Avg: 0.5, Var: 0.01, Calls: 7}}}}
	tests := []struct {
		name    string
		data    string // "" for no file
		want    State
		wantErr error
		why     string // in the error
	}{
		{"missing file", "", State{}, nil, ""},
		{"valid", validState, ring, nil, ""},
		{"no keys", `{"format": "commtune-tune/1", "platform": "0123abcd"}`, State{}, nil, ""},
		{"corrupt", `{"format": "commtune-tune/1", "platform": "0123abcd", "keys": {`, State{}, ErrBadState, "unexpected end"},
		{"not an object", `[1, 2]`, State{}, ErrBadState, "array"},
		{"no format", `{"platform": "0123abcd", "keys": {}}`, State{}, ErrBadState, "no format field"},
		{"foreign format", `{"format": "commtune-tune/2", "platform": "0123abcd", "keys": []}`, State{}, ErrForeignState, `format "commtune-tune/2"`},
		{"foreign platform", strings.Replace(validState, "0123abcd", "ffff", 1), State{}, ErrForeignState, `platform "ffff", this is "0123abcd"`},
		{"negative average", strings.Replace(validState, "0.5", "-0.5", 1), State{}, ErrBadState, "average -0.5"},
		{"negative calls", strings.Replace(validState, `"calls": 7`, `"calls": -7`, 1), State{}, ErrBadState, "calls -7"},
		{"unknown field", strings.Replace(validState, `"calls"`, `"runs"`, 1), State{}, ErrBadState, `unknown field "runs"`},
		{"bad key", strings.Replace(validState, "ranks=8", "ranks=08", 1), State{}, ErrBadState, "canonical"},
		{"data after the state", validState + "{}", State{}, ErrBadState, "invalid character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.tune.json")
			if tc.data != "" {
				writeFile(t, path, tc.data)
			}
			got, err := LoadState(path, testPlatform)
			if tc.wantErr == nil {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("LoadState = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("LoadState error %v, want one wrapping %v", err, tc.wantErr)
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, tc.why) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line naming %s and saying %q", msg, path, tc.why)
			}
		})
	}
}

func TestSaveState(t *testing.T) {
	mine := State{Keys: map[Key]map[string]Stats{keyA: {"ring": {Avg: 1, Calls: 3}}}}
	t.Run("missing file and directory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "new", "x.tune.json")
		if err := SaveState(path, testPlatform, State{}, mine); err != nil {
			t.Fatal(err)
		}
		if got, err := LoadState(path, testPlatform); err != nil || !reflect.DeepEqual(got, mine) {
			t.Fatalf("saved %+v, %v; want %+v", got, err, mine)
		}
	})
	t.Run("adds to the file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "x.tune.json")
		writeFile(t, path, validState)
		if err := SaveState(path, testPlatform, State{}, mine); err != nil {
			t.Fatal(err)
		}
		got, err := LoadState(path, testPlatform)
		if err != nil {
			t.Fatal(err)
		}
		if r := got.Keys[keyA]["ring"]; r.Calls != 10 {
			t.Fatalf("ring %+v, want the file's 7 calls and mine's 3", r)
		}
	})
	t.Run("corrupt file is replaced by mine", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "x.tune.json")
		writeFile(t, path, "{garbage")
		base := State{Keys: map[Key]map[string]Stats{keyA: {"ring": {Avg: 1, Calls: 2}}}}
		if err := SaveState(path, testPlatform, base, mine); err != nil {
			t.Fatal(err)
		}
		if got, err := LoadState(path, testPlatform); err != nil || !reflect.DeepEqual(got, mine) {
			t.Fatalf("saved %+v, %v; want mine %+v whole", got, err, mine)
		}
	})
	for _, foreign := range []string{
		strings.Replace(validState, "0123abcd", "ffff", 1),
		strings.Replace(validState, "commtune-tune/1", "commtune-tune/2", 1),
	} {
		t.Run("foreign file is left alone", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.tune.json")
			writeFile(t, path, foreign)
			err := SaveState(path, testPlatform, State{}, mine)
			if !errors.Is(err, ErrForeignState) || !strings.Contains(err.Error(), path) {
				t.Fatalf("SaveState over a foreign file: %v", err)
			}
			if b, _ := os.ReadFile(path); string(b) != foreign {
				t.Fatalf("foreign file overwritten with %s", b)
			}
		})
	}
	t.Run("nothing new is not written", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "x.tune.json")
		writeFile(t, path, validState)
		base, err := LoadState(path, testPlatform)
		if err != nil {
			t.Fatal(err)
		}
		if err := SaveState(path, testPlatform, base, base); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); string(b) != validState {
			t.Fatalf("file rewritten: %s", b)
		}
	})
}

// saveJobs runs n jobs one after another, as worker g: each loads the
// file, learns one call of the shared key keyA and one of a key of its
// own (keyB with Ranks g·1000+i), and saves. Other workers' saves land
// between its load and its save.
func saveJobs(path string, g, n int) error {
	for i := range n {
		base, err := LoadState(path, testPlatform)
		if err != nil {
			return err
		}
		own := keyB
		own.Ranks = g*1000 + i
		mine := Merge(base, State{Keys: map[Key]map[string]Stats{
			keyA: {"ring": {Avg: float64(g + 1), Calls: 1}},
			own:  {"tree": {Avg: 1, Calls: 1}},
		}})
		if err := SaveState(path, testPlatform, base, mine); err != nil {
			return err
		}
	}
	return nil
}

// checkSaved checks that every job of workers × n saves is in the file.
func checkSaved(t *testing.T, path string, workers, n int) {
	t.Helper()
	got, err := LoadState(path, testPlatform)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Keys[keyA]["ring"].Calls; c != int64(workers*n) {
		t.Errorf("shared key has %d calls, want %d", c, workers*n)
	}
	for g := range workers {
		for i := range n {
			own := keyB
			own.Ranks = g*1000 + i
			if c := got.Keys[own]["tree"].Calls; c != 1 {
				t.Errorf("worker %d job %d: key %s has %d calls, want 1", g, i, own, c)
			}
		}
	}
	if len(got.Keys) != 1+workers*n {
		t.Errorf("%d keys, want %d", len(got.Keys), 1+workers*n)
	}
}

// TestSaveStateConcurrent: goroutines saving at once, each through its
// own open lock file (flock excludes open file descriptions, so they
// exclude each other as processes do), lose no job's learning.
func TestSaveStateConcurrent(t *testing.T) {
	const workers, n = 2, 50
	path := filepath.Join(t.TempDir(), "x.tune.json")
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[g] = saveJobs(path, g, n)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	checkSaved(t, path, workers, n)
}

// saveChildEnv makes the test binary a worker of TestSaveStateProcesses:
// "path,worker".
const saveChildEnv = "COMMTUNE_TUNE_SAVE_CHILD"

// TestSaveStateProcesses: the same with two processes.
func TestSaveStateProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const workers, n = 2, 50
	path := filepath.Join(t.TempDir(), "x.tune.json")
	cmds := make([]*exec.Cmd, workers)
	outs := make([]strings.Builder, workers)
	for g := range workers {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSaveStateChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d", saveChildEnv, path, g))
		cmd.Stdout, cmd.Stderr = &outs[g], &outs[g]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[g] = cmd
	}
	for g, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v\n%s", g, err, outs[g].String())
		}
	}
	checkSaved(t, path, workers, n)
}

// TestSaveStateChild is one worker process of TestSaveStateProcesses; it
// does nothing unless started by it.
func TestSaveStateChild(t *testing.T) {
	v := os.Getenv(saveChildEnv)
	if v == "" {
		t.Skip("a worker of TestSaveStateProcesses")
	}
	i := strings.LastIndexByte(v, ',')
	g, err := strconv.Atoi(v[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("%s=%q", saveChildEnv, v)
	}
	if err := saveJobs(v[:i], g, 50); err != nil {
		t.Fatal(err)
	}
}

// FuzzLoadState: ParseState never panics; what it accepts holds only
// valid measurements and writes back (MarshalState) to the same State;
// what it refuses, it says in one line.
func FuzzLoadState(f *testing.F) {
	for _, s := range stateSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseState(data, testPlatform)
		if err != nil {
			if !errors.Is(err, ErrBadState) && !errors.Is(err, ErrForeignState) {
				t.Fatalf("error %v wraps neither sentinel", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		l, _ := NewLottery(LotteryConfig{})
		if err := l.Restore(s); err != nil {
			t.Fatalf("accepted a state Restore refuses: %v", err)
		}
		out, err := MarshalState(s, testPlatform)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseState(out, testPlatform)
		if err != nil {
			t.Fatalf("%s: written back, it does not parse: %v", out, err)
		}
		if len(s.Keys) == 0 && len(back.Keys) == 0 {
			return // nil or empty
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("written back and read again %+v, want %+v", back, s)
		}
	})
}

var stateSeeds = []string{
	validState,
	`{"format": "commtune-tune/1", "platform": "0123abcd", "keys": {}}`,
	`{"format": "commtune-tune/1", "platform": "0123abcd", "keys": {"bcast/ranks=4/size=2^10/noncommutative/tcp": {"flat": {"avg_s": 2e-06, "var_s2": 0, "calls": 1}, "binomial": {"avg_s": 1e-06, "var_s2": 1e-14, "calls": 90}}}}`,
	`{"format": "commtune-tune/2", "platform": "0123abcd", "keys": {}}`,
	`{"format": "commtune-tune/1", "platform": "ffff", "keys": {}}`,
	strings.Replace(validState, "0.5", "-0.5", 1),
	strings.Replace(validState, "ranks=8", "ranks=08", 1),
	`{"format": "commtune-tune/1", "platform": "0123abcd", "keys": {`,
	"null",
	"",
}

// TestStateFuzzSeeds keeps testdata/fuzz/FuzzLoadState in step with
// stateSeeds (go test -run StateFuzzSeeds -rewrite-seeds).
func TestStateFuzzSeeds(t *testing.T) {
	var seeds []fuzzseed.Seed
	for i, s := range stateSeeds {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed-%02d", i), Values: []any{[]byte(s)}})
	}
	fuzzseed.Sync(t, "FuzzLoadState", seeds)
}
