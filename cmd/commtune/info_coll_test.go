package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/tune"
)

// TestInfoCollAlgorithms: the coll section lists every registered
// algorithm with its attributes in JSON, and sums them up per operation in
// text.
func TestInfoCollAlgorithms(t *testing.T) {
	rep, err := collectColl(infoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*collInfo)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back collInfo
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	entries := coll.Registry().Entries()
	if len(back.Algorithms) != len(entries) {
		t.Fatalf("JSON lists %d algorithms, the registry holds %d", len(back.Algorithms), len(entries))
	}
	for i, a := range back.Algorithms {
		e := entries[i]
		if a.Name != e.Name || len(a.Attrs) != len(e.Attrs) {
			t.Fatalf("algorithm %d: %+v, registry entry %+v", i, a, e)
		}
		for _, at := range e.Attrs {
			if a.Attrs[at.Key] != at.Value {
				t.Errorf("%s: %s=%q, want %q", a.Name, at.Key, a.Attrs[at.Key], at.Value)
			}
		}
	}
	var text bytes.Buffer
	if err := r.writeText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"allreduce           38  reduce-bcast, recursive-doubling, ring, rabenseifner, direct, hierarchical\n",
		"bcast               34  flat, chain, binary, binomial, knomial, direct, hierarchical\n",
		"alltoallv            1  pairwise\n",
		"reducescatterblock   8  recursive-halving, ring, recursive-doubling, reduce-scatterv\n",
		"scan                 7  recursive-doubling, linear\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// TestInfoCollLottery: the coll section shows the lottery's saved
// learning per key, the favourite marked, and says in its section, not as
// a failure, when the file is off or unusable.
func TestInfoCollLottery(t *testing.T) {
	fp, _, err := config.Platform()
	if err != nil {
		t.Fatal(err)
	}
	key := tune.Key{Op: "bcast", Ranks: 4, SizeClass: 10, Commutative: true, Transports: "shm"}
	l, err := tune.NewLottery(tune.LotteryConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		l.Record(key, "bcast/flat/seg=none", time.Duration(100+i%3)*time.Microsecond)
		l.Record(key, "bcast/binary/seg=none", time.Duration(101+i%3)*time.Microsecond)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.tune.json")
	if err := tune.SaveState(good, fp.ID, tune.State{}, l.Snapshot()); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.tune.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		state string
		text  []string // in the text form
		keys  int
	}{
		{good, []string{"learned in " + good, key.String(), "* bcast/flat/seg=none", "80%"}, 1},
		{bad, []string{"the lottery (COMMTUNE_COLL_SELECT=learn): ", "bad.tune.json"}, 0},
		{commtune.TuneStateOff, []string{"its learning is not kept (COMMTUNE_TUNE_STATE=off)"}, 0},
		{filepath.Join(dir, "missing.tune.json"), []string{"nothing learned yet"}, 0},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.state), func(t *testing.T) {
			t.Setenv(commtune.EnvTuneState, tc.state)
			t.Setenv(commtune.EnvCollSelect, "") // the default
			rep, err := collectColl(infoOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := rep.(*collInfo)
			if len(r.Lottery.Keys) != tc.keys {
				t.Fatalf("%d keys, want %d: %+v", len(r.Lottery.Keys), tc.keys, r.Lottery)
			}
			var text bytes.Buffer
			if err := r.writeText(&text); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.text {
				if !strings.Contains(text.String(), want) {
					t.Errorf("text lacks %q:\n%s", want, text.String())
				}
			}
		})
	}
}

// TestInfoCollSampled: the coll section says which decision table is in
// force, and lists a sampled table's points with their runner-ups.
func TestInfoCollSampled(t *testing.T) {
	p := lineProfile(t)
	p.Transports["shm"].NodeCPUs = 2
	p.Transports["shm"].Coll = map[string]profile.CollTable{"4": {"allreduce": {
		{Bytes: 1 << 20, Ranked: []profile.CollTime{{Algo: "allreduce/ring", MeanUS: 500, Blocks: 9}, {Algo: "allreduce/rabenseifner", MeanUS: 550, Blocks: 9}}},
	}}}
	path := filepath.Join(t.TempDir(), "p.json")
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, sel string
		want      []string
	}{
		{"sampled", "", []string{"in force over shared memory: sampled table for 4 ranks on 2 processors",
			"allreduce  4      1M     allreduce/ring  500.0    allreduce/rabenseifner  550.0    +10%"}},
		{"fixed", "fixed", []string{"in force over shared memory: fixed table (COMMTUNE_COLL_SELECT=fixed)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(commtune.EnvProfile, path)
			t.Setenv(commtune.EnvCollSelect, tc.sel)
			rep, err := collectColl(infoOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			if err := rep.(*collInfo).writeText(&text); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(text.String(), w) {
					t.Errorf("text lacks %q:\n%s", w, text.String())
				}
			}
		})
	}
}
