package profile

import (
	"github.com/commtune/commtune/internal/sched"
	"slices"

	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/fuzzseed"
	"github.com/commtune/commtune/internal/topo"
)

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	p := testProfile()
	p.Created = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	path := filepath.Join(dir, "sub", "p.json")
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path, p.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Created.Equal(p.Created) || len(got.Transports["tcp"].Methods[EagerCopy]) != len(p.Transports["tcp"].Methods[EagerCopy]) {
		t.Fatalf("round trip lost data: %+v", got)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "sub", "*"))
	if len(names) != 1 {
		t.Fatalf("files left beside the profile: %v", names)
	}

	other := p.Fingerprint
	other.Kernel = "7.0"
	other.ID = other.Sum()
	if _, err := Load(path, other); !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), "kernel 6.1 → 7.0") {
		t.Errorf("foreign platform: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.json"), p.Fingerprint); !IsMissing(err) {
		t.Errorf("missing file: %v", err)
	}
}

func TestLoadRejects(t *testing.T) {
	good, err := json.Marshal(testProfile())
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(p *Profile)) []byte {
		p := testProfile()
		f(p)
		b, _ := json.Marshal(p)
		return b
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"not json", []byte("{\"version\": 1,"), "invalid profile"},
		{"trailing data", append(append([]byte(nil), good...), []byte("{}")...), "data after"},
		{"other version", edit(func(p *Profile) { p.Version = 2 }), "format version 2"},
		{"edited platform", edit(func(p *Profile) { p.Fingerprint.CPU = "faster" }), "does not match its fields"},
		{"sizes out of order", edit(func(p *Profile) {
			c := p.Transports["tcp"].Methods[EagerCopy]
			c[3].Size = c[1].Size
		}), "not increasing"},
		{"negative time", edit(func(p *Profile) { p.Transports["tcp"].Methods[EagerCopy][0].Median = -1 }), "median"},
		{"quartiles inverted", edit(func(p *Profile) { p.Transports["shm"].Methods[EagerCopy][0].P25 = 1e9 }), "quartiles"},
		{"empty curve", edit(func(p *Profile) { p.Transports["tcp"].Methods[Rendezvous] = Curve{} }), "0 samples"},
		{"no transport data", edit(func(p *Profile) { p.Transports["udp"] = nil }), "no data"},
		{"rail curve empty", edit(func(p *Profile) { p.Transports["tcp"].Rails = map[string]Curve{"eth1/ipv4": {}} }), "rail eth1/ipv4: 0 samples"},
		{"rail unnamed", edit(func(p *Profile) {
			p.Transports["tcp"].Rails = map[string]Curve{"": p.Transports["tcp"].Methods[Rendezvous]}
		}), `a rail named ""`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.json")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path, testProfile().Fingerprint)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v; want an invalid-profile error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestPath(t *testing.T) {
	fp := Fingerprint{ID: "0123456789abcdef"}
	tests := []struct {
		name string
		env  map[string]string
		want string
		err  bool
	}{
		{"explicit", map[string]string{EnvPath: "/tmp/x.json", "HOME": "/home/u"}, "/tmp/x.json", false},
		{"xdg", map[string]string{"XDG_CACHE_HOME": "/c", "HOME": "/home/u"}, "/c/commtune/0123456789abcdef.json", false},
		{"relative xdg ignored", map[string]string{"XDG_CACHE_HOME": "c", "HOME": "/home/u"}, "/home/u/.cache/commtune/0123456789abcdef.json", false},
		{"home", map[string]string{"HOME": "/home/u"}, "/home/u/.cache/commtune/0123456789abcdef.json", false},
		{"nothing", map[string]string{}, "", true},
	}
	for _, tc := range tests {
		got, err := Path(fp, func(k string) string { return tc.env[k] })
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%s: Path = %q, %v; want %q (error %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestMachine(t *testing.T) {
	a := Machine([]string{"shm", "tcp rails=1"})
	b := Machine([]string{"shm", "tcp rails=1"})
	if a.ID == "" || a.ID != b.ID || a.Go == "" || a.CPUs < 1 {
		t.Fatalf("fingerprints %+v and %+v", a, b)
	}
	if c := Machine([]string{"tcp rails=2"}); c.ID == a.ID {
		t.Fatal("a different set of transports has the same fingerprint")
	}
}

// TestCacheSummary: the fingerprint names each kind of cache and where
// the caches were read, so a machine whose caches come from CPUID does not
// share a profile with one whose sysfs lists the same ones.
func TestCacheSummary(t *testing.T) {
	l3 := func(total bool) topo.Cache {
		return topo.Cache{Level: 3, Type: topo.Unified, Size: 508 << 20, LineSize: 64, CPUs: []int{0}, Total: total}
	}
	tests := []struct {
		name string
		topo *topo.Topology
		want string
	}{
		{"sysfs", &topo.Topology{Caches: []topo.Cache{l3(false)}, CacheSource: topo.CachesFromSysfs}, "L3 508M×1 (sysfs)"},
		{"cpuid", &topo.Topology{Caches: []topo.Cache{l3(true), l3(true)}, CacheSource: topo.CachesFromCPUID}, "L3 508M×2 (cpuid)"},
		{"none", &topo.Topology{CacheSource: topo.CachesFromNone, CacheNote: "sysfs lists no cache"}, "none listed"},
	}
	for _, tc := range tests {
		if got := cacheSummary(tc.topo); got != tc.want {
			t.Errorf("%s: cacheSummary = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// FuzzProfile feeds arbitrary bytes to the profile parser: it must never
// panic, and whatever it accepts must tune without panicking and give
// thresholds within the sampled range.
// The seed corpus is testdata/fuzz/FuzzProfile (see TestFuzzSeeds).
func FuzzProfile(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse: error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for name, tr := range p.Transports {
			// A valid rail curve makes a rail model (what a split reads).
			for rail, c := range tr.Rails {
				m, err := sched.NewRailModel(c.Points())
				if err != nil {
					t.Fatalf("%s rail %s: %v", name, rail, err)
				}
				if n := m.Capacity(m.Predict(1 << 20)); n < 1<<20 {
					t.Fatalf("%s rail %s: Capacity(Predict(1 MiB)) = %d", name, rail, n)
				}
			}
			tu, err := p.Tune(name, nil)
			if err != nil {
				continue
			}
			if tu.Iovec < 1 || tu.Rendezvous < 0 || tu.Aggregation < 0 {
				t.Fatalf("%s: thresholds %v", name, tu)
			}
			if tr.MaxEager > 0 && tu.Rendezvous > tr.MaxEager {
				t.Fatalf("%s: eager up to %d beyond the eager limit %d", name, tu.Rendezvous, tr.MaxEager)
			}
			for _, m := range tr.MethodNames() {
				if _, err := p.Predict(name, m, 1000); err != nil {
					t.Fatalf("Predict %s %s: %v", name, m, err)
				}
			}
		}
		// A valid node pass gives a pull range of sizes it sampled, for a
		// rank count it ran.
		for name, tr := range p.Transports {
			for _, job := range [][2]int{{2, 2}, {4, 2}, {3, 64}} {
				at, ok := tr.CollPull(job[0], job[1])
				if !ok {
					continue
				}
				if at.From < 0 || at.To != 0 && at.To <= at.From || !slices.Contains(tr.NodeRanks(), at.Ranks) {
					t.Fatalf("%s: %d ranks on %d cpus: pull range %+v (passes of %v ranks)", name, job[0], job[1], at, tr.NodeRanks())
				}
			}
		}
	})
}

// TestFuzzSeeds keeps testdata/fuzz/FuzzProfile in step with the format
// (go test -run FuzzSeeds -rewrite-seeds): a valid profile, small ones
// that reach each check, and near misses.
func TestFuzzSeeds(t *testing.T) {
	small := testProfile()
	for _, tr := range small.Transports {
		for m, c := range tr.Methods {
			tr.Methods[m] = c[:3] // keep seeds small: the fuzzer mutates every byte
		}
	}
	valid, err := json.Marshal(small)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(valid); err != nil {
		t.Fatalf("the valid seed does not parse: %v", err)
	}
	fp := Fingerprint{CPU: "x"}
	fp.ID = fp.Sum()
	minimal, _ := json.Marshal(&Profile{Version: Version, Fingerprint: fp, Transports: map[string]*Transport{
		"tcp": {MaxEager: 64, Methods: map[string]Curve{
			EagerCopy:  {{Size: 1, Median: 10, P25: 9, P75: 11, Reps: 3}, {Size: 64, Median: 20, P25: 19, P75: 21, Reps: 3}},
			EagerIovec: {{Size: 1, Median: 12, P25: 11, P75: 13, Reps: 3}, {Size: 64, Median: 15, P25: 14, P75: 16, Reps: 3}},
			Rendezvous: {{Size: 1, Median: 30, P25: 29, P75: 31, Reps: 3}},
		}},
	}})
	withRails := *small
	withRails.Transports = map[string]*Transport{}
	for name, tr := range small.Transports {
		c := *tr
		c.Rails = map[string]Curve{"eth1/ipv4": tr.Methods[EagerCopy], "eth2/ipv4": tr.Methods[EagerIovec]}
		withRails.Transports[name] = &c
	}
	railed, _ := json.Marshal(&withRails)
	if _, err := Parse(railed); err != nil {
		t.Fatalf("the seed with rails does not parse: %v", err)
	}
	withNode := *small
	withNode.Transports = map[string]*Transport{}
	for name, tr := range small.Transports {
		c := *tr
		c.NodeCPUs = 2
		c.Node = map[string]map[string]Curve{"4": {NodeRing: tr.Methods[EagerCopy], NodePull: tr.Methods[EagerIovec]}}
		c.Coll = map[string]CollTable{"4": testCollTable()}
		withNode.Transports[name] = &c
	}
	noded, _ := json.Marshal(&withNode)
	if _, err := Parse(noded); err != nil {
		t.Fatalf("the seed with a node pass does not parse: %v", err)
	}
	seeds := []fuzzseed.Seed{
		{Name: "valid", Values: []any{valid}},
		{Name: "node", Values: []any{noded}},
		{Name: "rails", Values: []any{railed}},
		{Name: "minimal", Values: []any{minimal}},
		{Name: "empty-object", Values: []any{[]byte("{}")}},
		{Name: "wrong-version", Values: []any{[]byte(`{"version":2}`)}},
		{Name: "null-transport", Values: []any{[]byte(`{"version":1,"transports":{"tcp":null}}`)}},
		{Name: "truncated", Values: []any{valid[:len(valid)/2]}},
	}
	fuzzseed.Sync(t, "FuzzProfile", seeds)
}
