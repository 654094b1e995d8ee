package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/topo"
	"github.com/commtune/commtune/internal/topo/topotest"
)

// e5345Tree is seed 004's two-socket Xeon E5345, as a sysfs tree.
var e5345Tree = filepath.Join("..", "..", "internal", "topo", "testdata", "e5345")

func TestInfo(t *testing.T) {
	// What package topo finds on this machine, whatever it has: caches
	// from sysfs, from CPUID, or none.
	machine, err := topo.Read()
	if err != nil {
		t.Fatal(err)
	}
	badTree := t.TempDir()
	if err := os.MkdirAll(filepath.Join(badTree, "devices", "system", "cpu"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(badTree, "devices", "system", "cpu", "online"), []byte("0-x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStdout []string
		wantStderr string
	}{
		{"all sections", []string{"info"}, 0, []string{
			"Topology (", "):\n" + machine.String(),
			"\nAllowed CPUs: ", ", from sched_getaffinity\n",
			"\nDMA_min (seed 004 §3.3) = cache size / (2 × cores sharing the cache)",
			"\nAssuming one rank pinned on each allowed CPU; every pair of those ranks:\n",
		}, ""},
		{"--topology", []string{"info", "--topology"}, 0, []string{"Topology (", "):\n" + machine.String(), "Allowed CPUs: "}, ""},
		// Seed 004's example machine: 1 MB under a shared 4 MB L2, 2 MB apart.
		{"--sysfs e5345", []string{"info", "--sysfs", e5345Tree}, 0, []string{
			"Machine: 8 CPUs (0-7), 2 packages, 8 cores\n  Package 0\n    L2 4M\n      L1d 32K + L1i 32K + Core 0 + CPU 0\n      L1d 32K + L1i 32K + Core 1 + CPU 4\n",
			"\nAllowed CPUs: 0-7, from --sysfs: all CPUs of the tree\n",
			"\n  1M      sharing L2 4M among 2 CPUs (4 pairs, e.g. CPUs 0 and 4)\n" +
				"  2M      sharing no cache, each alone in its own L2 4M (24 pairs, e.g. CPUs 0 and 1)\n",
		}, ""},
		{"help", []string{"help", "info"}, 0, nil, "usage: commtune info [--topology] [--profile] [--coll] [--halo] [--shm] [--launcher] [--json] [--sysfs DIR] [--file PROFILE]"},
		{"argument", []string{"info", "cpus"}, 2, nil, `commtune info: unexpected argument "cpus"`},
		{"unknown flag", []string{"info", "--bogus"}, 2, nil, "flag provided but not defined: -bogus"},
		{"absent tree", []string{"info", "--sysfs", filepath.Join(badTree, "absent")}, 1, nil, "no such file or directory"},
		{"malformed tree", []string{"info", "--sysfs", badTree}, 1, nil, `online: malformed: CPU list "0-x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			ok := r.code == tc.code && strings.Contains(r.stderr, tc.wantStderr)
			for _, w := range tc.wantStdout {
				ok = ok && strings.Contains(r.stdout, w)
			}
			if !ok {
				t.Fatalf("commtune %q: exit %d, stdout\n%s\nstderr %q\nwant exit %d, stdout with %q, stderr with %q",
					tc.args, r.code, r.stdout, r.stderr, tc.code, tc.wantStdout, tc.wantStderr)
			}
		})
	}
}

// TestInfoJSON checks that --json prints one object whose topology section
// is what package topo finds when called in this process, with the profile
// and collective sections beside it.
func TestInfoJSON(t *testing.T) {
	r := runCLI(t, "info", "--json")
	if r.code != 0 {
		t.Fatalf("commtune info --json: exit %d, stderr %q", r.code, r.stderr)
	}
	var sections map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&sections); err != nil || dec.More() {
		t.Fatalf("commtune info --json printed %q: not one JSON object (%v)", r.stdout, err)
	}
	if len(sections) != 6 || sections["topology"] == nil || sections["profile"] == nil || sections["coll"] == nil || sections["halo"] == nil || sections["shm"] == nil || sections["launcher"] == nil {
		t.Fatalf("commtune info --json printed %q; want six keys, topology, profile, coll, halo, shm and launcher", r.stdout)
	}
	var colls collInfo
	if err := json.Unmarshal(sections["coll"], &colls); err != nil || len(colls.Rules) < len(coll.Operations) {
		t.Fatalf("coll section %s: %v; want a rule per operation at least", sections["coll"], err)
	}
	var rep *topologyReport
	dec = json.NewDecoder(bytes.NewReader(sections["topology"]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil || rep.Topology == nil {
		t.Fatalf("topology section %s: %v", sections["topology"], err)
	}
	var prof profileReport
	if err := json.Unmarshal(sections["profile"], &prof); err != nil || prof.Status != "off" || prof.Fingerprint.ID == "" {
		t.Fatalf("profile section %s: %v; want status off (the tests set %s=off) and a fingerprint", sections["profile"], err, "COMMTUNE_PROFILE")
	}
	want, err := topo.Read()
	if err != nil {
		t.Fatal(err)
	}
	allowed, err := topo.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.Topology, want) {
		t.Errorf("JSON topology %+v; topo.Read() = %+v", rep.Topology, want)
	}
	if !reflect.DeepEqual(rep.Allowed, allowed) || rep.AllowedFrom != "sched_getaffinity" {
		t.Errorf("JSON allowed %v from %q; topo.Allowed() = %v", rep.Allowed, rep.AllowedFrom, allowed)
	}
	if groups := want.DMAMinPairs(allowed); !reflect.DeepEqual(rep.DMAMin.Groups, groups) {
		t.Errorf("JSON dma_min groups %+v; DMAMinPairs(allowed) = %+v", rep.DMAMin.Groups, groups)
	}
	if rep.DMAMin.Rule != dmaMinRule || rep.DMAMin.Assumption != dmaMinAssumption {
		t.Errorf("JSON dma_min rule %q, assumption %q", rep.DMAMin.Rule, rep.DMAMin.Assumption)
	}
	for _, g := range rep.DMAMin.Groups {
		t.Logf("DMA_min here: %d bytes for %d pair(s), e.g. CPUs %v", g.Bytes, g.Pairs, g.CPUs)
	}
}

// TestInfoPinned runs `commtune info` under taskset on one CPU: the
// allowed CPUs are that one, and DMA_min is for two ranks sharing it.
func TestInfoPinned(t *testing.T) {
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("taskset (util-linux) not found")
	}
	allowed, err := topo.Allowed()
	if err != nil {
		t.Skipf("topo.Allowed: %v", err)
	}
	cpu := strconv.Itoa(allowed[len(allowed)-1])
	cmd := cliCommand("info")
	cmd.Args = append([]string{taskset, "-c", cpu}, cmd.Args...)
	cmd.Path = taskset
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("taskset -c %s commtune info: %v, stderr %q", cpu, err, stderr.String())
	}
	machine, err := topo.Read()
	if err != nil {
		t.Fatal(err)
	}
	// One CPU: one group, both ranks on it, under its smallest data cache
	// if the machine lists one.
	groups := machine.DMAMinPairs([]int{allowed[len(allowed)-1]})
	if len(groups) != 1 {
		t.Fatalf("DMAMinPairs of one CPU = %+v, want one group", groups)
	}
	for _, want := range []string{
		"\nAllowed CPUs: " + cpu + ", from sched_getaffinity\n",
		"  " + dmaMinValue(groups[0]) + " ",
		dmaMinReason(groups[0]) + "\n",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Fatalf("taskset -c %s commtune info printed\n%s\nwant %q in it", cpu, stdout.String(), want)
		}
	}
}

// TestInfoCacheSources runs `commtune info --json` on two copies of a
// machine's sysfs ($COMMTUNE_SYSFS), whatever machine the tests run on:
// one that lists caches (read from it) and one without cache directories
// (caches from this processor's CPUID where it can say, else none). The
// CLI must report what package topo reads in this process.
func TestInfoCacheSources(t *testing.T) {
	epyc2 := filepath.Join("..", "..", "internal", "topo", "testdata", "epyc2")
	noCaches := topotest.WithoutCaches(t, epyc2)
	abs, err := filepath.Abs(epyc2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tree string
		sources    []string // what the source may be
	}{
		{"caches in sysfs", abs, []string{topo.CachesFromSysfs}},
		{"no cache directories", noCaches, []string{topo.CachesFromCPUID, topo.CachesFromNone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(topo.EnvSysfs, tc.tree)
			want, err := topo.Read()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(tc.sources, want.CacheSource) {
				t.Fatalf("topo.Read with %s=%s: caches from %q (%s), want one of %v", topo.EnvSysfs, tc.tree, want.CacheSource, want.CacheNote, tc.sources)
			}
			r := runCLI(t, "info", "--topology", "--json")
			var got struct {
				Topology topologyReport `json:"topology"`
			}
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil {
				t.Fatalf("commtune info --json: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			if !reflect.DeepEqual(got.Topology.Topology, want) || got.Topology.Source != topo.EnvSysfs+"="+tc.tree {
				t.Fatalf("commtune info read %+v from %q; topo.Read here %+v", got.Topology.Topology, got.Topology.Source, want)
			}
			t.Logf("caches from %s: %d instances %s", want.CacheSource, len(want.Caches), want.CacheNote)
		})
	}
}
