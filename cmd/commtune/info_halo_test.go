package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/tune"
)

// TestInfoHalo saves a decision where a job would, then checks that
// `commtune info --halo` lists every implementation and tells the decision
// with its measurements and reasons; and that a file of another platform
// is reported in the section, not as a failure.
func TestInfoHalo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "halo.json")
	t.Setenv(commtune.EnvHaloState, path)
	fp, _, err := config.Platform()
	if err != nil {
		t.Fatal(err)
	}
	d := tune.Decision{Winner: "SendRecv_pair_ddt", Seconds: 1.25e-3, Method: "hypothesis", Calls: 70, Selections: 1,
		Means: map[string]float64{"SendRecv_pair_ddt": 1.25e-3, "IsendIrecv_aao_pack": 2.5e-3}, Explain: []string{"partners=pair settled"}, At: time.Unix(1.8e9, 0).UTC()}
	if err := tune.SaveDecision(path, fp.ID, "halo/np=8/test", d); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "info", "--halo")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range append(commtune.HaloImpls(), "halo/np=8/test", "winner SendRecv_pair_ddt", "by hypothesis after 70 calls", "partners=pair settled", path) {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("commtune info --halo lacks %q:\n%s", want, r.stdout)
		}
	}
	other := filepath.Join(t.TempDir(), "other.json")
	if err := tune.SaveDecision(other, "another-platform", "k", d); err != nil {
		t.Fatal(err)
	}
	t.Setenv(commtune.EnvHaloState, other)
	r = runCLI(t, "info", "--halo")
	if r.code != 0 || !strings.Contains(r.stdout, "another platform") && !strings.Contains(r.stdout, "other format or platform") {
		t.Fatalf("foreign file: exit %d, stdout %q; want the section to say the file is another platform's", r.code, r.stdout)
	}
}

// TestBenchHalo runs the halo benchmark on goroutine ranks: a row per
// implementation and per selector, each selector with its choice.
func TestBenchHalo(t *testing.T) {
	r := runCLI(t, "bench", "halo", "-n", "2", "--grid", "4x4x4", "--iters", "40", "--samples", "1", "--transport", "inproc", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var rep bench.HaloReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v: %q", err, r.stdout)
	}
	impls := commtune.HaloImpls()
	if want := len(impls) + len(commtune.HaloSelectors()); len(rep.Runs) != want {
		t.Fatalf("%d runs, want %d", len(rep.Runs), want)
	}
	for i, run := range rep.Runs {
		selector := i >= len(impls)
		if run.Seconds <= 0 || (run.Choice != "") != selector {
			t.Errorf("run %d %+v: want a positive time, and a choice for a selector only", i, run)
		}
	}
	for _, bad := range [][]string{{"--grid", "4x4"}, {"--impl", "nope"}, {"--iters", "0"}, {"-n", "0"}} {
		if r := runCLI(t, append([]string{"bench", "halo", "--transport", "inproc"}, bad...)...); r.code != 2 {
			t.Errorf("bench halo %v: exit %d, want 2 (usage)", bad, r.code)
		}
	}
}
