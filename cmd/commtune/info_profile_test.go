package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/profile/profiletest"
)

// lineProfile is profiletest.Known for this platform.
func lineProfile(t *testing.T) *profile.Profile {
	t.Helper()
	fp, _, err := config.Platform()
	if err != nil {
		t.Fatal(err)
	}
	return profiletest.Known(fp)
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
			"shm  0..99.6K eager-iovec | 99.6K..1.1M rendezvous/copy | 1.1M.. rendezvous/cachefree\n",
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
	tcp := p.Selections[1]
	if p.Status != "loaded" || len(p.Selections) != 2 || tcp.Transport != "tcp" || tcp.Ranges[1].From != 1000 || tcp.Ranges[2].From != 196000 {
		t.Fatalf("JSON profile section %+v", p)
	}
}
