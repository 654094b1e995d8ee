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
	"time"

	"github.com/commtune/commtune/internal/boot"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/topo"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		check   func(Config) bool
		wantErr string // substring; "" for no error
	}{
		{"nothing set", nil, func(c Config) bool { return c.RendezvousThreshold == 0 && c.SpinWait == 0 }, ""},
		{"sizes", map[string]string{EnvRendezvousThreshold: "32K", EnvIovecThreshold: "512", EnvUnexpectedLimit: "8MiB"},
			func(c Config) bool {
				return c.RendezvousThreshold == 32<<10 && c.IovecThreshold == 512 && c.UnexpectedLimit == 8<<20
			}, ""},
		{"rails", map[string]string{EnvRails: " 10.0.0.1, 10.0.1.1:7000 ,"},
			func(c Config) bool { return len(c.Rails) == 2 && c.Rails[1] == "10.0.1.1:7000" }, ""},
		{"spin", map[string]string{EnvSpinWait: "1ms"}, func(c Config) bool { return c.SpinWait == time.Millisecond }, ""},
		{"spin zero means never", map[string]string{EnvSpinWait: "0s"}, func(c Config) bool { return c.SpinWait < 0 }, ""},
		{"timeout", map[string]string{EnvConnectTimeout: "5s"}, func(c Config) bool { return c.ConnectTimeout == 5*time.Second }, ""},
		{"tune state", map[string]string{EnvTuneState: " /var/tmp/job.tune.json "},
			func(c Config) bool { return c.TuneState == "/var/tmp/job.tune.json" }, ""},
		{"tune state off", map[string]string{EnvTuneState: "off"}, func(c Config) bool { return c.TuneState == TuneStateOff }, ""},
		{"tune state blank is the default", map[string]string{EnvTuneState: "  "}, func(c Config) bool { return c.TuneState == "" }, ""},
		{"bad size", map[string]string{EnvRendezvousThreshold: "lots"}, nil, EnvRendezvousThreshold},
		{"negative size", map[string]string{EnvUnexpectedLimit: "-1"}, nil, EnvUnexpectedLimit},
		{"bad spin", map[string]string{EnvSpinWait: "fast"}, nil, EnvSpinWait},
		{"bad timeout", map[string]string{EnvConnectTimeout: "-3s"}, nil, EnvConnectTimeout},
		{"split", map[string]string{EnvSplit: " Weighted "}, func(c Config) bool { return c.Split == SplitWeighted }, ""},
		{"aggregate size", map[string]string{EnvAggregate: "4K"}, func(c Config) bool { return c.Aggregation == 4096 }, ""},
		{"aggregate off", map[string]string{EnvAggregate: "OFF"}, func(c Config) bool { return c.Aggregation < 0 }, ""},
		{"aggregate zero", map[string]string{EnvAggregate: "0"}, nil, EnvAggregate},
		{"aggregate huge", map[string]string{EnvAggregate: "2M"}, nil, EnvAggregate},
		{"aggregate junk", map[string]string{EnvAggregate: "often"}, nil, EnvAggregate},
		{"blank is unset", map[string]string{EnvShmRing: " ", EnvSplit: "", EnvTransports: "\t"},
			func(c Config) bool { return c.Shm.Ring == 0 && c.Split == "" && c.Transports == nil }, ""},
		{"names in any case", map[string]string{EnvShmMethod: "CMA", EnvTransports: "TCP", EnvCollSelect: "Lottery"},
			func(c Config) bool {
				return c.Shm.Method == "cma" && len(c.Transports) == 1 && c.Transports[0] == "tcp" && c.CollSelect == CollSelectLottery
			}, ""},
		{"ring alone", map[string]string{EnvShmRing: "64K"}, func(c Config) bool { return c.Shm.Ring == 64<<10 && c.Shm.Chunk == 0 }, ""},
		{"iovec never", map[string]string{EnvShmIovec: "Never", EnvIovecThreshold: "0"},
			func(c Config) bool { return c.Shm.Iovec < 0 && c.IovecThreshold == 1 }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			err := c.applyEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(c) {
				t.Fatalf("config %+v, err %v", c, err)
			}
		})
	}
}

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

func TestListenAddrs(t *testing.T) {
	got, err := listenAddrs([]string{"127.0.0.1", "10.0.0.2:7000", "::1"})
	if err != nil || got[0] != "127.0.0.1:0" || got[1] != "10.0.0.2:7000" || got[2] != "[::1]:0" {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := listenAddrs([]string{"a:b:c"}); err == nil {
		t.Fatal("bad rail accepted")
	}
	// An interface name listens on its address: every Linux machine has lo.
	if got, err := listenAddrs([]string{"lo"}); err != nil || got[0] != "127.0.0.1:0" {
		t.Fatalf("lo: %v %v", got, err)
	}
}

func TestCheckMultirail(t *testing.T) {
	for _, tc := range []struct {
		c       Config
		want    string // Split after the check
		wantErr bool
	}{
		{Config{}, SplitCurves, false},
		{Config{Split: SplitIso}, SplitIso, false},
		{Config{Split: SplitOff, Aggregation: -1}, SplitOff, false},
		{Config{Split: "fastest"}, "", true},
		{Config{Aggregation: maxAggregation + 1}, "", true},
	} {
		err := tc.c.checkMultirail()
		if (err != nil) != tc.wantErr || (err == nil && tc.c.Split != tc.want) {
			t.Errorf("%+v: split %q, err %v", tc.c, tc.c.Split, err)
		}
		if err != nil && !strings.Contains(err.Error(), "Config.") {
			t.Errorf("%v: does not name the field", err)
		}
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

func TestDefaultSpin(t *testing.T) {
	tests := []struct {
		set         time.Duration
		ranks, cpus int
		want        time.Duration
		yield       bool
	}{
		{0, 2, 2, 0, false},                              // the engine's default applies
		{0, 4, 2, oversubscribedSpin, true},              // oversubscribed: poll and yield
		{time.Millisecond, 4, 2, time.Millisecond, true}, // an explicit budget wins
		{-1, 4, 2, -1, true},                             // never poll stays never
	}
	for _, tc := range tests {
		c := Config{SpinWait: tc.set}
		c.defaultSpin(tc.ranks, tc.cpus)
		if c.SpinWait != tc.want || c.coreConfig().YieldWait != tc.yield {
			t.Errorf("SpinWait %v with %d ranks on %d cpus: got %v yield %v, want %v yield %v",
				tc.set, tc.ranks, tc.cpus, c.SpinWait, c.yieldWait, tc.want, tc.yield)
		}
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
		{name: EnvShmMethod, value: "dma", want: []string{`COMMTUNE_SHM_METHOD="dma": want auto, copy, cma, vmsplice or cachefree`}},
		{name: EnvShmCMA, value: "maybe", want: []string{`COMMTUNE_SHM_CMA="maybe": want on or off`}},
		{name: EnvCollSelect, value: "random", want: []string{`COMMTUNE_COLL_SELECT="random": want table or lottery`}},
		{name: EnvLotteryAlpha, value: "0", want: []string{`COMMTUNE_LOTTERY_ALPHA="0": want a number in (0, 1]`}},
		{name: EnvLotteryAlpha, value: "NaN", want: []string{`COMMTUNE_LOTTERY_ALPHA="NaN": want a number in (0, 1]`}},
		{name: EnvLotteryWeight, value: "1.5", want: []string{`COMMTUNE_LOTTERY_WEIGHT="1.5": want a number in (0, 1]`}},
		{name: EnvLotteryMinTTL, value: "0", want: []string{`COMMTUNE_LOTTERY_MIN_TTL="0": want a whole number of calls from 1 to 65536`}},
		{name: EnvLotteryMaxTTL, value: "many", want: []string{`COMMTUNE_LOTTERY_MAX_TTL="many": want a whole number of calls`}},
		{name: EnvLotteryMinTTL, value: "40", with: map[string]string{EnvLotteryMaxTTL: "8"},
			want: []string{`COMMTUNE_LOTTERY_MIN_TTL="40" with COMMTUNE_LOTTERY_MAX_TTL="8": want the least calls per draw no more than the most`}},
		{name: EnvHaloSelect, value: "fastest", want: []string{`COMMTUNE_HALO_SELECT="fastest": want brute, hypothesis or an implementation: `}},
		{name: EnvHaloSamples, value: "0", want: []string{`COMMTUNE_HALO_SAMPLES="0": want a whole number of exchanges from 1 to 1000`}},
		{name: EnvHaloOrder, value: "random", want: []string{`COMMTUNE_HALO_ORDER="random": want interleaved or consecutive`}},
		{name: EnvSplit, value: "fastest", want: []string{`COMMTUNE_SPLIT="fastest": want curves, weighted, iso or off`}},
		{name: EnvAggregate, value: "0", want: []string{`COMMTUNE_AGGREGATE="0": want a size from 1 to 1M bytes`, "or off"}},
		{name: EnvAggregate, value: "often", want: []string{`COMMTUNE_AGGREGATE="often": want a size from 1 to 1M bytes`}},

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
		{name: boot.EnvPMIVersion, value: "2", with: map[string]string{boot.EnvPMIPort: "127.0.0.1:1", boot.EnvPMIID: "0"},
			want: []string{`COMMTUNE_PMI="2" with PMI_PORT="127.0.0.1:1": want PMI_FD`}},
	}
	for _, op := range coll.Operations {
		name := collEnv(op)
		rows = append(rows, row{name: name, value: "nosuch",
			want: []string{name + `="nosuch": want an algorithm of ` + string(op), "known: "}})
	}
	// Read, but by `commtune bench` ranks only, and neither has a bad
	// value: a file prefix that cannot be created fails the rank naming
	// the variable (cmd/commtune/rank.go).
	excluded := map[string]string{
		"COMMTUNE_BENCH_CPUPROFILE": "benchmark-only file prefix",
		"COMMTUNE_BENCH_TRACE":      "benchmark-only file prefix",
	}

	// No variable of the outer environment (a launcher's, a user's) may
	// leak into the cases; t.Setenv restores them afterwards.
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "COMMTUNE_") || strings.HasPrefix(k, "PMI_") || strings.HasPrefix(k, "SLURM_") {
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
			if boot.IsLauncherVar(r.name) || r.name == boot.EnvPMIVersion {
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

// TestSettingsTogether: settings each valid alone are checked together
// after the Options; a setting left unset follows the other, so only two
// set conflict, and the error names each as it was given: the variable
// when its value stands, the field when an Option set it.
func TestSettingsTogether(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		opt   Option
		check func(Config) bool // when no error is wanted
		want  []string          // in the error; nil for none
	}{
		{"ring alone", map[string]string{EnvShmRing: "64K"}, nil, func(c Config) bool { return c.Shm.Ring == 64<<10 }, nil},
		{"chunk alone", map[string]string{EnvShmChunk: "1M"}, nil, func(c Config) bool { return c.Shm.Chunk == 1<<20 }, nil},
		{"ring and chunk agreeing", map[string]string{EnvShmRing: "64K", EnvShmChunk: "16K"}, nil, func(Config) bool { return true }, nil},
		{"both variables", map[string]string{EnvShmRing: "64K", EnvShmChunk: "1M"}, nil, nil,
			[]string{`COMMTUNE_SHM_CHUNK="1M" with COMMTUNE_SHM_RING="64K"`, "quarter of the ring"}},
		{"variable and option", map[string]string{EnvShmRing: "64K"}, func(c *Config) { c.Shm.Chunk = 1 << 20 }, nil,
			[]string{`Config.Shm.Chunk=1048576 with COMMTUNE_SHM_RING="64K"`}},
		{"an option overriding a variable is named as the field", map[string]string{EnvShmRing: "64K", EnvShmChunk: "16K"},
			func(c *Config) { c.Shm.Ring = 8 << 10 }, nil, []string{`COMMTUNE_SHM_CHUNK="16K" with Config.Shm.Ring=8192`}},
		{"an option settling the conflict", map[string]string{EnvShmRing: "64K", EnvShmChunk: "1M"},
			func(c *Config) { c.Shm.Ring = 8 << 20 }, func(c Config) bool { return c.Shm.Ring == 8<<20 }, nil},
		{"both options", nil, func(c *Config) { c.Shm.Ring, c.Shm.Chunk = 4096, 2048 }, nil,
			[]string{"Config.Shm.Chunk=2048 with Config.Shm.Ring=4096"}},
		{"max ttl alone", map[string]string{EnvLotteryMaxTTL: "2"}, nil,
			func(c Config) bool { return c.LotteryMinTTL == 2 && c.LotteryMaxTTL == 2 }, nil},
		{"min ttl alone", map[string]string{EnvLotteryMinTTL: "100"}, nil,
			func(c Config) bool { return c.LotteryMinTTL == 100 && c.LotteryMaxTTL == 100 }, nil},
		{"ttl defaults", nil, nil, func(c Config) bool {
			return c.LotteryMinTTL == defaultLotteryMinTTL && c.LotteryMaxTTL == defaultLotteryMaxTTL
		}, nil},
		{"ttls crossed", map[string]string{EnvLotteryMinTTL: "40", EnvLotteryMaxTTL: "8"}, nil, nil,
			[]string{`COMMTUNE_LOTTERY_MIN_TTL="40" with COMMTUNE_LOTTERY_MAX_TTL="8"`}},
		{"ttl option crossing a variable", map[string]string{EnvLotteryMaxTTL: "8"}, func(c *Config) { c.LotteryMinTTL = 50 }, nil,
			[]string{`Config.LotteryMinTTL=50 with COMMTUNE_LOTTERY_MAX_TTL="8"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var opts []Option
			if tc.opt != nil {
				opts = append(opts, tc.opt)
			}
			c, err := configFrom(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }, opts)
			if tc.want == nil {
				if err != nil || !tc.check(c) {
					t.Fatalf("%+v, %v", c.Shm, err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

// TestBadFieldNamesIt: a field an Option set wrong is named as the field,
// also when the variable for it holds a good value.
func TestBadFieldNamesIt(t *testing.T) {
	tests := []struct {
		opt  Option
		want string
	}{
		{func(c *Config) { c.RendezvousThreshold = -5 }, "Config.RendezvousThreshold=-5: want a size in bytes"},
		{func(c *Config) { c.UnexpectedLimit = -1 }, "Config.UnexpectedLimit=-1: want a size in bytes"},
		{func(c *Config) { c.Rails = []string{"a:b:c"} }, "Config.Rails=[a:b:c]: want hosts, host:port or interface names"},
		{func(c *Config) { c.ConnectTimeout = -time.Second }, "Config.ConnectTimeout=-1s: want a positive duration"},
		{func(c *Config) { c.Transports = []string{"udp", "tcp"} }, "Config.Transports=[udp tcp]: want shm and tcp"},
		{func(c *Config) { c.Shm.Method = "dma" }, `Config.Shm.Method="dma": want auto, copy, cma, vmsplice or cachefree`},
		{func(c *Config) { c.Shm.DMAMin = -1 }, "Config.Shm.DMAMin=-1: want a size in bytes"},
		{func(c *Config) { c.Shm.Ring = 3000 }, "Config.Shm.Ring=3000: want a power of two from 4K to 1G bytes (0 for the default)"},
		{func(c *Config) { c.Shm.Chunk = -1 }, "Config.Shm.Chunk=-1: want a size from 1 to 256M bytes"},
		{func(c *Config) { c.CollSelect = "random" }, `Config.CollSelect="random": want table or lottery`},
		{func(c *Config) { c.LotteryAlpha = 2 }, "Config.LotteryAlpha=2: want a number in (0, 1]"},
		{func(c *Config) { c.LotteryWeight = -1 }, "Config.LotteryWeight=-1: want a number in (0, 1]"},
		{func(c *Config) { c.LotteryMaxTTL = 1 << 20 }, "Config.LotteryMaxTTL=1048576: want a whole number of calls from 1 to 65536"},
		{func(c *Config) { c.Collectives = map[string]string{"bcast": "nosuch"} }, `Config.Collectives["bcast"]="nosuch": want an algorithm of bcast`},
		{func(c *Config) { c.Collectives = map[string]string{"broadcast": "binomial"} }, `Config.Collectives["broadcast"]="binomial": want an operation's name`},
		{func(c *Config) { c.Split = "fastest" }, `Config.Split="fastest": want curves, weighted, iso or off`},
		{func(c *Config) { c.Aggregation = 2 << 20 }, "Config.Aggregation=2097152: want at most 1048576 bytes"},
	}
	env := map[string]string{EnvShmMethod: "copy", EnvSplit: "iso", EnvShmRing: "64K", EnvCollSelect: "table"}
	for _, tc := range tests {
		_, err := configFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, []Option{tc.opt})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v\nwant %q", err, tc.want)
		}
	}
}
