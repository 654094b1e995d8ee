package commtune

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/boot"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/topo"
)

func TestOptionsOverrideEnv(t *testing.T) {
	t.Setenv(EnvRendezvousThreshold, "1K")
	c, err := buildConfig([]Option{func(c *Config) { c.RendezvousThreshold = 2048 }})
	if err != nil || c.RendezvousThreshold != 2048 || c.ConnectTimeout != DefaultConnectTimeout {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := buildConfig([]Option{func(c *Config) { c.RendezvousThreshold = -5 }}); err == nil {
		t.Fatal("negative threshold accepted")
	}
}

func TestLocalErrors(t *testing.T) {
	if err := Local(0, func(*Comm) error { return nil }); err == nil {
		t.Fatal("Local(0) accepted")
	}
	err := Local(3, func(c *Comm) error {
		if c.Rank() == 1 {
			panic("boom")
		}
		// The others wait for rank 1 and must fail rather than hang.
		_, err := c.Recv(t.Context(), nil, 1, 0)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "rank 1: panic: boom") {
		t.Fatalf("Local returned %v, want rank 1's panic first", err)
	}
}

func TestSingletonInit(t *testing.T) {
	for _, k := range []string{"COMMTUNE_RANK", "COMMTUNE_SIZE"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	c, err := Init(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if c.Rank() != 0 || c.Size() != 1 {
		t.Fatalf("singleton is rank %d of %d", c.Rank(), c.Size())
	}
	b := make([]byte, 3)
	if err := c.Send(t.Context(), []byte("abc"), 0, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Recv(t.Context(), b, 0, 1); err != nil || string(b) != "abc" {
		t.Fatalf("%q %v", b, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(t.Context(), nil, 0, 0); err == nil {
		t.Fatal("send after Close accepted")
	}
}

// TestBadSettingNamesIt gives each variable commtune or its CLI reads a bad
// value and checks that the error names the variable, with the text given,
// and what it accepts; a value wrong only with another's names both. It
// fails when a variable read in the source has no row here: add one, or a
// row saying why no value of it is bad, or an exclusion saying why.
func TestBadSettingNamesIt(t *testing.T) {
	job := map[string]string{ // a good launcher environment: rank 1 of 4, 1 of 2 on its node
		boot.EnvRank: "1", boot.EnvSize: "4", boot.EnvLocalRank: "1", boot.EnvLocalSize: "2",
		boot.EnvJob: "job-1", boot.EnvBoot: "127.0.0.1:4000", boot.EnvKey: strings.Repeat("ab", 32),
	}
	missing := filepath.Join(t.TempDir(), "missing")
	const size = "want a size in bytes"
	type row struct {
		name  string            // the variable
		value string            // its bad value
		with  map[string]string // the other variables the case needs
		want  []string          // in the error
		free  string            // instead of a value: why none is bad
	}
	rows := []row{
		{name: EnvRendezvousThreshold, value: "lots", want: []string{`COMMTUNE_RNDV_THRESHOLD="lots": ` + size}},
		{name: EnvRendezvousThreshold, value: "-1", want: []string{`COMMTUNE_RNDV_THRESHOLD="-1": ` + size}},
		{name: EnvIovecThreshold, value: "sometimes", want: []string{`COMMTUNE_IOVEC_THRESHOLD="sometimes": ` + size, "or never"}},
		{name: EnvUnexpectedLimit, value: "-1", want: []string{`COMMTUNE_UNEXPECTED_LIMIT="-1": ` + size}},
		{name: EnvRails, value: "a:b:c", want: []string{`COMMTUNE_RAILS="a:b:c": want hosts, host:port or interface names`}},
		{name: EnvRails, value: " , ", want: []string{`COMMTUNE_RAILS=",": want hosts`}},
		{name: EnvSpinWait, value: "fast", want: []string{`COMMTUNE_SPIN_WAIT="fast": want a duration like 50us`}},
		{name: EnvConnectTimeout, value: "-3s", want: []string{`COMMTUNE_CONNECT_TIMEOUT="-3s": want a positive duration`}},
		{name: EnvConnectTimeout, value: "30", want: []string{`COMMTUNE_CONNECT_TIMEOUT="30": want a positive duration like 30s`}},
		{name: EnvProfile, free: "a path, or off: a profile that cannot be read costs one line on stderr and the job runs on its defaults"},
		{name: EnvTuneState, free: "a path, or off: a state file that cannot be read or written costs one line on stderr, never the job"},
		{name: EnvHaloState, free: "a path, or off: as COMMTUNE_TUNE_STATE"},
		{name: EnvCounters, value: "1", want: []string{`COMMTUNE_COUNTERS="1": want on or off`}},
		{name: EnvPprofLabels, value: "yes", want: []string{`COMMTUNE_PPROF_LABELS="yes": want on or off`}},
		{name: EnvTrace, free: "a directory: made at Init, whose failure fails Init with its reason"},
		{name: topo.EnvSysfs, value: missing, want: []string{`COMMTUNE_SYSFS="` + missing + `": want the root of a copy of /sys`}},
		{name: EnvTransports, value: "udp", want: []string{`COMMTUNE_TRANSPORTS="udp": want shm and tcp, comma-separated, with tcp`}},
		{name: EnvTransports, value: "shm", want: []string{`COMMTUNE_TRANSPORTS="shm": want shm and tcp`}},
		{name: EnvTransports, value: ",", want: []string{`COMMTUNE_TRANSPORTS=",": want shm and tcp`}},
		{name: EnvShmEager, value: "big", want: []string{`COMMTUNE_SHM_EAGER="big": ` + size}},
		{name: EnvShmIovec, value: "-5", want: []string{`COMMTUNE_SHM_IOVEC="-5": ` + size, "or never"}},
		{name: EnvShmDMAMin, value: "1X", want: []string{`COMMTUNE_SHM_DMA_MIN="1X": ` + size}},
		{name: EnvShmRing, value: "3000", want: []string{`COMMTUNE_SHM_RING="3000": want a power of two from 4K to 1G bytes`}},
		{name: EnvShmRing, value: "2K", want: []string{`COMMTUNE_SHM_RING="2K": want a power of two from 4K`}},
		{name: EnvShmRing, value: "0", want: []string{`COMMTUNE_SHM_RING="0": want a power of two`}},
		{name: EnvShmRing, value: "4G", want: []string{`COMMTUNE_SHM_RING="4G": want a power of two`}},
		{name: EnvShmRing, value: "lots", want: []string{`COMMTUNE_SHM_RING="lots": want a power of two`}},
		{name: EnvShmChunk, value: "0", want: []string{`COMMTUNE_SHM_CHUNK="0": want a size from 1 to 256M bytes`}},
		{name: EnvShmChunk, value: "1G", want: []string{`COMMTUNE_SHM_CHUNK="1G": want a size from 1 to 256M bytes`}},
		{name: EnvShmChunk, value: "1M", with: map[string]string{EnvShmRing: "64K"},
			want: []string{`COMMTUNE_SHM_CHUNK="1M" with COMMTUNE_SHM_RING="64K": want a chunk of at most a quarter of the ring (16K)`}},
		{name: EnvShmBudget, value: "1K", want: []string{`COMMTUNE_SHM_BUDGET="1K": want a size of at least 4K bytes`}},
		{name: EnvShmBudget, value: "lots", want: []string{`COMMTUNE_SHM_BUDGET="lots": want a size of at least 4K bytes`}},
		{name: EnvShmMethod, value: "dma", want: []string{`COMMTUNE_SHM_METHOD="dma": want auto, copy, cma, vmsplice or cachefree`}},
		{name: EnvShmCMA, value: "maybe", want: []string{`COMMTUNE_SHM_CMA="maybe": want on or off`}},
		{name: EnvShmQueue, value: "sometimes", want: []string{`COMMTUNE_SHM_QUEUE="sometimes": want auto, on or off`}},
		{name: EnvCollSelect, value: "random", want: []string{`COMMTUNE_COLL_SELECT="random": want learn, table, fixed or lottery`}},
		{name: EnvLotteryAlpha, value: "0", want: []string{`COMMTUNE_LOTTERY_ALPHA="0": want a number in (0, 1]`}},
		{name: EnvLotteryAlpha, value: "NaN", want: []string{`COMMTUNE_LOTTERY_ALPHA="NaN": want a number in (0, 1]`}},
		{name: EnvLotteryWeight, value: "1.5", want: []string{`COMMTUNE_LOTTERY_WEIGHT="1.5": want a number in (0, 1]`}},
		{name: EnvLotteryMinTTL, value: "0", want: []string{`COMMTUNE_LOTTERY_MIN_TTL="0": want a whole number of calls from 1 to 65536`}},
		{name: EnvLotteryMaxTTL, value: "many", want: []string{`COMMTUNE_LOTTERY_MAX_TTL="many": want a whole number of calls`}},
		{name: EnvLotteryMinTTL, value: "40", with: map[string]string{EnvLotteryMaxTTL: "8"},
			want: []string{`COMMTUNE_LOTTERY_MIN_TTL="40" with COMMTUNE_LOTTERY_MAX_TTL="8": want the least calls per draw no more than the most`}},
		{name: EnvHaloSelect, value: "fastest", want: []string{`COMMTUNE_HALO_SELECT="fastest": want learn, brute, hypothesis or an implementation: `}},
		{name: EnvHaloSamples, value: "0", want: []string{`COMMTUNE_HALO_SAMPLES="0": want a whole number of exchanges from 1 to 1000`}},
		{name: EnvHaloOrder, value: "random", want: []string{`COMMTUNE_HALO_ORDER="random": want interleaved or consecutive`}},
		{name: EnvSplit, value: "fastest", want: []string{`COMMTUNE_SPLIT="fastest": want curves, weighted, iso or off`}},
		{name: EnvAggregate, value: "0", want: []string{`COMMTUNE_AGGREGATE="0": want a size from 1 to 1M bytes`, "or off"}},
		{name: EnvAggregate, value: "often", want: []string{`COMMTUNE_AGGREGATE="often": want a size from 1 to 1M bytes`}},
		{name: EnvBind, value: "socket", want: []string{`COMMTUNE_BIND="socket": want auto or none`}},
		{name: EnvCollPull, value: "soon", want: []string{`COMMTUNE_COLL_PULL="soon": want a size of at least 1 bytes`, "or off"}},

		// The launcher's job variables, with the others good.
		{name: boot.EnvRank, value: "one", with: job, want: []string{`COMMTUNE_RANK="one": want a decimal whole number from 0 to 3`}},
		{name: boot.EnvRank, value: " 1", with: job, want: []string{`COMMTUNE_RANK=" 1": want a decimal whole number`}},
		{name: boot.EnvRank, value: "4", with: job, want: []string{`COMMTUNE_RANK="4" with COMMTUNE_SIZE="4": want COMMTUNE_RANK from 0 to 3`}},
		{name: boot.EnvSize, value: "0", with: job, want: []string{`COMMTUNE_SIZE="0": want a decimal whole number from 1`}},
		{name: boot.EnvLocalRank, value: "x", with: job, want: []string{`COMMTUNE_LOCAL_RANK="x": want a decimal whole number from 0 to 1`}},
		{name: boot.EnvLocalSize, value: "5", with: job, want: []string{`COMMTUNE_LOCAL_SIZE="5" with COMMTUNE_SIZE="4": want COMMTUNE_LOCAL_SIZE from 1 to 4`}},
		{name: boot.EnvJob, value: "../etc", with: job, want: []string{`COMMTUNE_JOB="../etc": want a job id`}},
		{name: boot.EnvBoot, value: "localhost", with: job, want: []string{`COMMTUNE_BOOT="localhost": want host:port`}},
		// The secret is named, never shown.
		{name: boot.EnvKey, value: "zz", with: job, want: []string{`COMMTUNE_KEY: want the job secret in hex`}},
		{name: boot.EnvNode, value: "a b", with: job, want: []string{`COMMTUNE_NODE="a b": want a node name`}},
		{name: boot.EnvPMIVersion, value: "3", want: []string{`COMMTUNE_PMI="3": want 1, 2 or auto`}},
		{name: boot.EnvKeepGoing, value: "yes", want: []string{`COMMTUNE_KEEP_GOING="yes": want 1 (the job survives a lost rank) or 0`}},
		{name: boot.EnvPMIVersion, value: "2", with: map[string]string{boot.EnvPMIPort: "127.0.0.1:1", boot.EnvPMIID: "0"},
			want: []string{`COMMTUNE_PMI="2" with PMI_PORT="127.0.0.1:1": want PMI_FD`}},
		{name: boot.EnvPMIxEncoding, value: "v2", want: []string{`COMMTUNE_PMIX="v2": want v41, v4, v3 or auto`}},
		{name: boot.EnvPMIxEncoding, value: "v3", with: map[string]string{boot.EnvPMIxNamespace: "77", boot.EnvPMIxRank: "0", "PMIX_SERVER_URI41": "77.0;tcp4://127.0.0.1:1"},
			want: []string{`COMMTUNE_PMIX=v3 but the server sets no PMIX_SERVER_URI3`}},
	}
	for _, op := range coll.Operations {
		name := EnvCollPrefix + strings.ToUpper(string(op))
		rows = append(rows, row{name: name, value: "nosuch",
			want: []string{name + `="nosuch": want an algorithm of ` + string(op), "known: "}})
	}
	// Read, but by `commtune bench` ranks only, and neither has a bad
	// value: a file prefix that cannot be created fails the rank naming
	// the variable (cmd/commtune/rank.go).
	excluded := map[string]string{
		"COMMTUNE_BENCH_CPUPROFILE": "benchmark-only file prefix",
		"COMMTUNE_BENCH_TRACE":      "benchmark-only file prefix",
		// Set by `commtune bench startup` for its own ranks; a bad value
		// fails the rank naming it (cmd/commtune/bench_startup.go).
		"COMMTUNE_BENCH_START_NS": "set by the benchmark for its ranks",
		"COMMTUNE_BENCH_ALLTOALL": "set by the benchmark for its ranks",
		// Read by a conformance case's ranks only; a bad value fails every
		// rank naming it (internal/conformance/persistent.go).
		"COMMTUNE_PERSISTENT_STARTS": "test-only count",
		// Read by TestBenchSoak only (cmd/commtune/bench_soak_test.go),
		// which fails naming it on a bad value.
		"COMMTUNE_SOAK": "test-only duration",
		// Read by the examples' tests only, through their helper
		// (internal/exampletest); a bad value fails the test naming it.
		"COMMTUNE_EXAMPLE_RUNS": "test-only count",
	}

	// No variable of the outer environment (a launcher's, a user's) may
	// leak into the cases; t.Setenv restores them afterwards.
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "COMMTUNE_") || strings.HasPrefix(k, "PMI_") || strings.HasPrefix(k, "PMIX_") || strings.HasPrefix(k, "SLURM_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	covered := map[string]bool{}
	for _, r := range rows {
		covered[r.name] = true
		if r.free != "" {
			continue
		}
		t.Run(r.name+"="+r.value, func(t *testing.T) {
			for k, v := range r.with {
				t.Setenv(k, v)
			}
			t.Setenv(r.name, r.value)
			var err error
			if boot.IsLauncherVar(r.name) || r.name == boot.EnvPMIVersion || r.name == boot.EnvPMIxEncoding || r.name == boot.EnvKeepGoing {
				var j *boot.Job
				if j, err = boot.Discover(t.Context()); err == nil {
					j.Close()
				}
			} else {
				_, err = buildConfig(nil)
			}
			if err == nil {
				t.Fatalf("accepted")
			}
			t.Log(err)
			for _, w := range r.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}

	// Every variable the source reads has a row, and the README lists it.
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range variablesInSource(t) {
		if strings.HasSuffix(name, "_") { // a prefix: COMMTUNE_COLL_<OP>, or all
			if !slices.ContainsFunc(slices.Collect(maps.Keys(covered)), func(v string) bool { return strings.HasPrefix(v, name) }) {
				t.Errorf("no row for any %s… variable", name)
			}
			continue
		}
		if _, ok := excluded[name]; !ok && !covered[name] {
			t.Errorf("%s is read but has no row here: give it a bad value, or say why none is bad", name)
		}
		listed := "`" + name + "`"
		if strings.HasPrefix(name, EnvCollPrefix) && name != EnvCollSelect {
			listed = "`" + EnvCollPrefix + "<OP>`"
		}
		if !bytes.Contains(readme, []byte(listed)) {
			t.Errorf("%s is read but README.md does not list %s", name, listed)
		}
	}
}

// variablesInSource returns the COMMTUNE_ names in the module's non-test
// Go files: the variables the library and its tools read, with prefixes
// (COMMTUNE_COLL_) and names in comments, which are variables too.
func variablesInSource(t *testing.T) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`COMMTUNE_[A-Z0-9_]*`)
	names := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAll(src, -1) {
			names[string(m)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 30 {
		t.Fatalf("found only %d variables in the source: %v", len(names), names)
	}
	return names
}
