package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/testenv"
)

// plotProfile is a profile of platform fp with straight-line curves: tcp
// switches to iovec at 1000 B, to rendezvous at 196000 B, and aggregates
// below 30000 B; shm has two large-message methods.
func plotProfile(fp profile.Fingerprint) *profile.Profile {
	sizes := func(hi int64) []int64 {
		var out []int64
		for s := int64(1); s <= hi; s *= 2 {
			out = append(out, s)
		}
		return out
	}
	line := func(at []int64, a, b float64) profile.Curve {
		c := make(profile.Curve, len(at))
		for i, s := range at {
			m := a + b*float64(s)
			c[i] = profile.Sample{Size: s, Median: m, P25: 0.98 * m, P75: 1.02 * m, Reps: 50}
		}
		return c
	}
	eager, all := sizes(512<<10), sizes(16<<20)
	return &profile.Profile{Version: profile.Version, Fingerprint: fp, Seconds: 3,
		Transports: map[string]*profile.Transport{
			"tcp": {MaxEager: 512 << 10, Methods: map[string]profile.Curve{
				profile.EagerCopy:  line(eager, 5000, 0.5),
				profile.EagerIovec: line(eager, 5200, 0.3),
				profile.Rendezvous: line(all, 15000, 0.25),
				profile.Aggregated: line(sizes(256<<10), 6000, 1.1),
				profile.TwoPackets: line(sizes(256<<10), 9000, 1.0),
			}},
			"shm": {MaxEager: 512 << 10, Methods: map[string]profile.Curve{
				profile.EagerCopy:                  line(eager, 400, 0.05),
				profile.EagerIovec:                 line(eager, 300, 0.05),
				profile.RendezvousVia("copy"):      line(all, 2000, 1.0/30),
				profile.RendezvousVia("cachefree"): line(all, 12000, 1.0/40),
			}},
		},
		Host: map[string]profile.Curve{profile.Memcpy: line(all, 20, 0.0001)},
	}
}

// otherMachine is the fingerprint of a machine that is not this one.
func otherMachine() profile.Fingerprint {
	fp := profile.Fingerprint{CPU: "Elsewhere 9000", CPUs: 64, Caches: "L3 256M×2", Kernel: "6.9", Go: "go1.26", Transports: []string{"shm", "tcp rails=2"}}
	fp.ID = fp.Sum() // Parse accepts no other
	return fp
}

// writeProfile writes p as JSON in dir and returns the file's path.
func writeProfile(t *testing.T, dir, name string, p *profile.Profile) string {
	t.Helper()
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// plotFigures are the figures of plotProfile, in the order plot lists them.
var plotFigures = []string{"shm-iovec", "shm-rendezvous", "shm-large", "tcp-iovec", "tcp-rendezvous", "tcp-aggregation"}

// runPlot runs `commtune plot args` in dir with env added to the CLI's.
func runPlot(t *testing.T, dir string, env []string, args ...string) cliResult {
	t.Helper()
	cmd := cliCommand(append([]string{"plot"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, env...) // the last of a variable set twice wins
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running the CLI: %v", err)
	}
	return cliResult{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// checkFileList checks that stdout lists each figure in outDir, PNG then
// SVG, as "PATH  N bytes", and that each file is there with that size.
func checkFileList(t *testing.T, stdout, cwd, outDir string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	var want []string
	for _, f := range plotFigures {
		want = append(want, filepath.Join(outDir, f+".png"), filepath.Join(outDir, f+".svg"))
	}
	var paths []string
	for _, l := range lines {
		path, rest, ok := strings.Cut(l, "  ")
		n, err := strconv.ParseInt(strings.TrimSuffix(rest, " bytes"), 10, 64)
		if !ok || err != nil || !strings.HasSuffix(rest, " bytes") || n <= 0 {
			t.Fatalf("line %q is not \"PATH  N bytes\"", l)
		}
		paths = append(paths, path)
		if !filepath.IsAbs(path) {
			path = filepath.Join(cwd, path)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != n {
			t.Errorf("%s: %d bytes on disk, %d listed", path, fi.Size(), n)
		}
	}
	if !slices.Equal(paths, want) {
		t.Fatalf("listed\n%s\nwant\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
}

func TestPlot(t *testing.T) {
	testenv.SkipUnderRace(t, "end-to-end runs of the plot command")
	dir := t.TempDir()
	foreign := writeProfile(t, dir, "foreign.json", plotProfile(otherMachine()))
	fp, _, err := config.Platform()
	if err != nil {
		t.Fatal(err)
	}
	mine := writeProfile(t, dir, "mine.json", plotProfile(fp))
	tests := []struct {
		name   string
		env    []string
		args   []string
		outDir string // as listed: relative to the working directory unless absolute
	}{
		// Another machine's profile is plotted as readily as this one's.
		{"--file", nil, []string{"--file", foreign, "--out", filepath.Join(dir, "out")}, filepath.Join(dir, "out")},
		{"this machine's", []string{"COMMTUNE_PROFILE=" + mine}, []string{"--out", filepath.Join(dir, "mine")}, filepath.Join(dir, "mine")},
		{"default --out", nil, []string{"--file", foreign}, "commtune-plots"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cwd := t.TempDir()
			r := runPlot(t, cwd, tc.env, tc.args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			checkFileList(t, r.stdout, cwd, tc.outDir)
		})
	}
}

func TestPlotErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "absent.json")
	corrupt := filepath.Join(dir, "corrupt.json")
	if err := os.WriteFile(corrupt, []byte(`{"version": 1, "transports": {`), 0o644); err != nil {
		t.Fatal(err)
	}
	tampered := plotProfile(otherMachine())
	tampered.Fingerprint.CPUs = 2 // the id no longer matches
	tamperedPath := writeProfile(t, dir, "tampered.json", tampered)
	foreign := writeProfile(t, dir, "foreign.json", plotProfile(otherMachine()))
	empty := plotProfile(otherMachine())
	empty.Transports = nil
	emptyPath := writeProfile(t, dir, "empty.json", empty)
	tests := []struct {
		name string
		env  []string
		args []string
		code int
		want []string // in stderr
	}{
		{"--file missing", nil, []string{"--file", missing}, 1,
			[]string{"no profile at " + missing, "`commtune sample --out " + missing + "`"}},
		{"--file corrupt", nil, []string{"--file", corrupt}, 1,
			[]string{"profile " + corrupt + ": invalid profile"}},
		{"--file tampered", nil, []string{"--file", tamperedPath}, 1,
			[]string{"invalid profile: fingerprint id"}},
		{"no transports", nil, []string{"--file", emptyPath}, 1, []string{"nothing to plot"}},
		{"machine's missing", []string{"COMMTUNE_PROFILE=" + missing}, nil, 1,
			[]string{"no tuning profile for this machine at " + missing, "`commtune sample`"}},
		{"machine's foreign", []string{"COMMTUNE_PROFILE=" + foreign}, nil, 1,
			[]string{"sampled on another platform", "--file " + foreign}},
		{"machine's corrupt", []string{"COMMTUNE_PROFILE=" + corrupt}, nil, 1, []string{"invalid profile", "`commtune sample`"}},
		{"profile off", nil, nil, 2, []string{"COMMTUNE_PROFILE=off: give --file FILE"}},
		{"argument", nil, []string{"--file", foreign, "extra"}, 2, []string{`unexpected argument "extra"`}},
		{"empty --out", nil, []string{"--file", foreign, "--out", ""}, 2, []string{"--out: empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cwd := t.TempDir()
			r := runPlot(t, cwd, tc.env, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			if _, err := os.Stat(filepath.Join(cwd, defaultPlotDir)); tc.code == 2 && err == nil {
				t.Error("a usage error created the output directory")
			}
		})
	}
}

func TestPlotHelp(t *testing.T) {
	r := runCLI(t, "help")
	if !strings.Contains(r.stdout, "plot ") || !strings.Contains(r.stdout, "draw each threshold's two curves and their crossing (PNG and SVG)") {
		t.Errorf("help does not list plot:\n%s", r.stdout)
	}
	r = runCLI(t, "help", "plot")
	if want := "usage: commtune plot [--out DIR] [--file FILE | --convergence FILE]"; r.code != 0 || !strings.Contains(r.stderr, want) {
		t.Errorf("help plot: exit %d, stderr %q", r.code, r.stderr)
	}
}
