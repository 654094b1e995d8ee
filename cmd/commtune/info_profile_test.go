package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/profile"
)

// lineProfile is a profile of this platform with straight-line curves
// whose thresholds are known: tcp switches to iovec at 1000 bytes and to
// rendezvous above 195999.
func lineProfile(t *testing.T) *profile.Profile {
	t.Helper()
	fp, _, err := control.Platform()
	if err != nil {
		t.Fatal(err)
	}
	line := func(sizes []int64, a, b float64) profile.Curve {
		var c profile.Curve
		for _, s := range sizes {
			m := a + b*float64(s)
			c = append(c, profile.Sample{Size: s, Median: m, P25: 0.99 * m, P75: 1.01 * m, Reps: 100})
		}
		return c
	}
	var eager, all []int64
	for s := int64(1); s <= 16<<20; s *= 2 {
		sizes := []int64{s}
		if s > 1 && s < 16<<20 {
			sizes = append(sizes, s+s/2)
		}
		for _, x := range sizes {
			if x <= 512<<10 {
				eager = append(eager, x)
			}
			all = append(all, x)
		}
	}
	return &profile.Profile{Version: profile.Version, Fingerprint: fp, Seconds: 12.5,
		Transports: map[string]*profile.Transport{"tcp": {MaxEager: 512 << 10, Methods: map[string]profile.Curve{
			profile.EagerCopy:  line(eager, 5000, 0.5),
			profile.EagerIovec: line(eager, 5200, 0.3),
			profile.Rendezvous: line(all, 15000, 0.25),
		}}}}
}

func TestInfoProfile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := lineProfile(t).Save(good); err != nil {
		t.Fatal(err)
	}
	foreign := lineProfile(t)
	foreign.Fingerprint.Kernel = "0.1"
	foreign.Fingerprint.ID = foreign.Fingerprint.Sum()
	foreignPath := filepath.Join(dir, "foreign.json")
	if err := foreign.Save(foreignPath); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt.json")
	if err := os.WriteFile(corrupt, []byte(`{"version": 1, "transports": {`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  string // COMMTUNE_PROFILE
		args []string
		want []string
	}{
		{"loaded", good, nil, []string{
			"Profile " + good + ": sampled ", "full pass of 12.5 s",
			"tcp  0..1000 eager-copy | 1000..191.4K eager-iovec | 191.4K.. rendezvous\n",
			"iovec       1000   the curves cross at 1000",
		}},
		{"--file", "off", []string{"--file", good}, []string{"Profile " + good + ": sampled "}},
		{"missing", filepath.Join(dir, "absent.json"), nil, []string{"Profile: none at " + filepath.Join(dir, "absent.json"), "run `commtune sample`", "Defaults:\n", "tcp  0..2K eager-copy | 2K..64K eager-iovec | 64K.. rendezvous"}},
		{"foreign", foreignPath, nil, []string{"Profile: ignored, ", "sampled on another platform (kernel 0.1 → "}},
		{"corrupt", corrupt, nil, []string{"Profile: ignored, ", "invalid profile"}},
		{"off", "off", nil, []string{"Profile: off (COMMTUNE_PROFILE=off)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := cliCommand(append([]string{"info", "--profile"}, tc.args...)...)
			cmd.Env = append(cmd.Env, "COMMTUNE_PROFILE="+tc.env)
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("commtune info --profile: %v, stderr %q", err, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Fatalf("output\n%s\nlacks %q", out.String(), w)
				}
			}
		})
	}

	// --json carries the same selection.
	cmd := cliCommand("info", "--profile", "--json")
	cmd.Env = append(cmd.Env, "COMMTUNE_PROFILE="+good)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Profile profileReport }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	p := got.Profile
	if p.Status != "loaded" || len(p.Selections) != 1 || p.Selections[0].Ranges[1].From != 1000 || p.Selections[0].Ranges[2].From != 196000 {
		t.Fatalf("JSON profile section %+v", p)
	}
}
