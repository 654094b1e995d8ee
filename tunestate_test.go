package commtune

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/tune"
)

// TestKeepsTuneState: goroutine ranks and single-rank jobs keep nothing,
// with the lottery on or not.
func TestKeepsTuneState(t *testing.T) {
	for _, opts := range [][]Option{nil, {withLottery}} {
		err := Local(2, func(c *Comm) error {
			if c.in.Endpoint().KeepsTuneState() || c.in.Endpoint().TuneStatePath() != "" {
				return fmt.Errorf("goroutine rank %d keeps the lottery's state", c.Rank())
			}
			return nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"COMMTUNE_RANK", "COMMTUNE_SIZE"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	c, err := Init(t.Context(), withLottery)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.in.Endpoint().KeepsTuneState() || c.in.Endpoint().TuneStatePath() != "" {
		t.Fatal("a single-rank job keeps the lottery's state")
	}
}

const (
	stateRanks    = 3
	stateElems    = 1024 // 8 KiB of float64: several allreduce candidates
	statePlatform = "test-platform"
)

// stateJob runs one job of goroutine ranks whose rank 0 keeps its
// lottery's learning in path, as rank 0 of a job of processes does
// (Local itself keeps none): it loads the file first, runs calls
// allreduces, and saves at Close. first, if not nil, runs on rank 0 after
// the first call. It returns rank 0's load warning, what it loaded, and
// its lottery's state at the end.
func stateJob(t *testing.T, path string, calls int, first func(c *Comm) error) (warning string, base, mine tune.State) {
	t.Helper()
	ctx := context.Background()
	err := Local(stateRanks, func(c *Comm) error {
		if c.Rank() == 0 {
			warning = c.in.Endpoint().LoadTuneState(path, statePlatform)
			base = c.in.Endpoint().Lottery.Snapshot()
		}
		send, recv := make([]float64, stateElems), make([]float64, stateElems)
		// Rounds of calls until the job has learned something: on a loaded
		// machine the lottery discards the windows that held a stall, and
		// a round may record nothing.
		more := []int32{1}
		for round := 0; more[0] == 1 && round < stateRounds; round++ {
			for i := range calls {
				if err := Allreduce(ctx, c, send, recv, Sum); err != nil {
					return err
				}
				if round == 0 && i == 0 && c.Rank() == 0 && first != nil {
					if err := first(c); err != nil {
						return err
					}
				}
			}
			if c.Rank() == 0 {
				more[0] = 0
				if !learned(base, c.in.Endpoint().Lottery.Snapshot()) {
					more[0] = 1
				}
			}
			if err := Bcast(ctx, c, more, 0); err != nil {
				return err
			}
		}
		if c.Rank() == 0 {
			mine = c.in.Endpoint().Lottery.Snapshot()
		}
		return nil
	}, withLottery)
	if err != nil {
		t.Fatal(err)
	}
	return warning, base, mine
}

// stateRounds bounds stateJob's rounds of calls.
const stateRounds = 20

// learned reports whether now records more allreduce calls than base, over
// two algorithms at least.
func learned(base, now tune.State) bool {
	total := func(s tune.State) (calls int64, algos int) {
		for _, algs := range s.Keys {
			for _, st := range algs {
				calls += st.Calls
				if st.Calls > 0 {
					algos++
				}
			}
		}
		return calls, algos
	}
	b, _ := total(base)
	n, algos := total(now)
	return n > b && algos >= 2
}

// allreduceKey returns the one allreduce key of s.
func allreduceKey(t *testing.T, s tune.State) tune.Key {
	t.Helper()
	var keys []tune.Key
	for k := range s.Keys {
		if k.Op == string(coll.OpAllreduce) {
			keys = append(keys, k)
		}
	}
	if len(keys) != 1 {
		t.Fatalf("state %v: want one allreduce key", s.Keys)
	}
	return keys[0]
}

// TestTuneStatePersists: a job's learning is in the file after it closes;
// the next job's lottery starts from it, its first draw the best-known
// algorithm, and adds its own learning to the file at close.
func TestTuneStatePersists(t *testing.T) {
	if n := len(coll.Candidates(coll.OpAllreduce, stateRanks, 8*stateElems, true)); n < 2 {
		t.Fatalf("%d allreduce candidates: nothing to select", n)
	}
	path := filepath.Join(t.TempDir(), "state", "m.tune.json")
	warning, _, _ := stateJob(t, path, 120, nil)
	if warning != "" {
		t.Fatalf("a missing file warned: %s", warning)
	}
	saved, err := tune.LoadState(path, statePlatform)
	if err != nil {
		t.Fatal(err)
	}
	key := allreduceKey(t, saved)
	if len(saved.Keys[key]) < 2 {
		t.Fatalf("first job saved %v: want several algorithms measured", saved.Keys[key])
	}
	// The best known, by the lottery's rule (fewest samples to lead
	// included), among the candidates.
	l, err := tune.NewLottery(tune.LotteryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Restore(saved); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range coll.Candidates(coll.OpAllreduce, stateRanks, 8*stateElems, true) {
		names = append(names, a.Name())
	}
	best, ok := l.Best(key, names)
	if !ok {
		t.Fatalf("first job saved %v: no best known", saved.Keys[key])
	}

	// The second job: its first call runs the best known.
	warning, base, mine := stateJob(t, path, 120, firstRuns(key, best))
	if warning != "" {
		t.Fatalf("loading the first job's file warned: %s", warning)
	}
	if fmt.Sprint(base) != fmt.Sprint(saved) {
		t.Fatalf("second job restored %v, want the file's %v", base, saved)
	}
	after, err := tune.LoadState(path, statePlatform)
	if err != nil {
		t.Fatal(err)
	}
	var before, now, added int64
	for name, s := range after.Keys[key] {
		was := saved.Keys[key][name]
		now += s.Calls
		before += was.Calls
		// What the second job adds, by tune.Update's rule: its calls since
		// the load, or all of its calls after a re-exploration discarded
		// the loaded ones.
		switch m := mine.Keys[key][name]; {
		case m == was:
		case m.Calls > was.Calls:
			added += m.Calls - was.Calls
		default:
			added += m.Calls
		}
	}
	if added == 0 || now != before+added {
		t.Fatalf("file holds %d calls of %s, want the first job's %d and the second's %d", now, key, before, added)
	}

	// However fast the table's choice, the first call runs what the file
	// says is best: make it the last candidate, which a cold start never
	// runs first.
	cands := coll.Candidates(coll.OpAllreduce, stateRanks, 8*stateElems, true)
	last := cands[len(cands)-1].Name()
	after.Keys[key][last] = tune.Stats{Avg: 1e-9, Calls: 1000}
	data, err := tune.MarshalState(after, statePlatform)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	stateJob(t, path, 2, firstRuns(key, last))
}

// firstRuns checks, after a job's first call of key, that it ran want.
func firstRuns(key tune.Key, want string) func(c *Comm) error {
	return func(c *Comm) error {
		got, ok := c.in.Drawn(key)
		if !ok {
			return fmt.Errorf("no draw for %s after the first call", key)
		}
		if got != want {
			return fmt.Errorf("first call ran %s, want the best known %s", got, want)
		}
		return nil
	}
}

// TestTuneStateBadFile: a corrupt file warns in one line, the lottery
// starts empty and the save replaces the file; a foreign one warns at load
// and at save and is left alone.
func TestTuneStateBadFile(t *testing.T) {
	t.Run("corrupt", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "m.tune.json")
		if err := os.WriteFile(path, []byte(`{"format": "commtune-tune/1", "keys": {`), 0o644); err != nil {
			t.Fatal(err)
		}
		warning, base, _ := stateJob(t, path, 60, nil)
		if !strings.Contains(warning, path) || strings.Contains(warning, "\n") || len(base.Keys) != 0 {
			t.Fatalf("warning %q, restored %v: want one line naming the file and an empty start", warning, base)
		}
		saved, err := tune.LoadState(path, statePlatform)
		if err != nil {
			t.Fatalf("the save did not replace the corrupt file: %v", err)
		}
		allreduceKey(t, saved)
	})
	t.Run("foreign", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "m.tune.json")
		foreign, err := tune.MarshalState(tune.State{}, "another-platform")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, foreign, 0o644); err != nil {
			t.Fatal(err)
		}
		var saveWarning string
		warning, _, _ := stateJob(t, path, 5, func(c *Comm) error {
			saveWarning = c.in.Endpoint().StoreTuneState()
			c.in.Endpoint().DropTuneState() // warned here, not again at Close
			return nil
		})
		for _, w := range []string{warning, saveWarning} {
			if !strings.Contains(w, "another-platform") || strings.Contains(w, "\n") {
				t.Errorf("warning %q: want one line naming the other platform", w)
			}
		}
		if got, _ := os.ReadFile(path); string(got) != string(foreign) {
			t.Fatalf("foreign file overwritten: %s", got)
		}
		if _, err := tune.LoadState(path, statePlatform); !errors.Is(err, tune.ErrForeignState) {
			t.Fatalf("LoadState = %v", err)
		}
	})
}
