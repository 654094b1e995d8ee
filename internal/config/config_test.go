package config

import (
	"strings"
	"testing"
	"time"
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
		{"counters off", map[string]string{EnvCounters: "Off"}, func(c Config) bool { return c.Counters == "off" }, ""},
		{"counters bad", map[string]string{EnvCounters: "1"}, nil, EnvCounters},
		{"trace dir", map[string]string{EnvTrace: "/tmp/t"}, func(c Config) bool { return c.Trace == "/tmp/t" }, ""},
		{"labels on", map[string]string{EnvPprofLabels: "on"}, func(c Config) bool { return c.PprofLabels == "on" }, ""},
		{"labels bad", map[string]string{EnvPprofLabels: "yes"}, nil, EnvPprofLabels},
		{"aggregate zero", map[string]string{EnvAggregate: "0"}, nil, EnvAggregate},
		{"coll pull size", map[string]string{EnvCollPull: "32K"}, func(c Config) bool { return c.CollPull == 32<<10 }, ""},
		{"coll pull off", map[string]string{EnvCollPull: "off"}, func(c Config) bool { return c.CollPull < 0 }, ""},
		{"bad coll pull", map[string]string{EnvCollPull: "soon"}, nil, EnvCollPull},
		{"bind none", map[string]string{EnvBind: "None"}, func(c Config) bool { return c.Bind == BindNone }, ""},
		{"bad bind", map[string]string{EnvBind: "socket"}, nil, EnvBind},
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
		{Config{Aggregation: MaxAggregation + 1}, "", true},
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
		c.DefaultSpin(tc.ranks, tc.cpus)
		if c.SpinWait != tc.want || c.CoreConfig().YieldWait != tc.yield {
			t.Errorf("SpinWait %v with %d ranks on %d cpus: got %v yield %v, want %v yield %v",
				tc.set, tc.ranks, tc.cpus, c.SpinWait, c.yieldWait, tc.want, tc.yield)
		}
	}
}

// TestSegmentSpin: the node segment polls segmentSpin while every rank has
// a processor and nothing was set; a set budget, oversubscription's
// default and "never" are the message waits' (engine).
func TestSegmentSpin(t *testing.T) {
	const engine = 123 * time.Microsecond
	tests := []struct {
		set         time.Duration
		ranks, cpus int
		want        time.Duration
	}{
		{0, 2, 2, segmentSpin},
		{0, 4, 2, engine},
		{time.Millisecond, 2, 2, engine},
		{-1, 2, 2, engine},
	}
	for _, tc := range tests {
		c := Config{SpinWait: tc.set}
		c.DefaultSpin(tc.ranks, tc.cpus)
		if got := c.SegmentSpin(engine); got != tc.want {
			t.Errorf("SpinWait %v with %d ranks on %d cpus: segment polls %v, want %v", tc.set, tc.ranks, tc.cpus, got, tc.want)
		}
	}
}

// TestCollPullFrom: collectives pull from the set size, never when off,
// and by default only where ranks outnumber processors.
func TestCollPullFrom(t *testing.T) {
	tests := []struct {
		set, ranks, cpus, want int
	}{
		{0, 2, 2, 0},
		{0, 4, 2, DefaultCollPull},
		{64 << 10, 2, 2, 64 << 10},
		{64 << 10, 4, 2, 64 << 10},
		{-1, 4, 2, 0},
	}
	for _, tc := range tests {
		c := Config{CollPull: tc.set}
		c.DefaultSpin(tc.ranks, tc.cpus)
		if got := c.CollPullFrom(); got != tc.want {
			t.Errorf("CollPull %d, %d ranks on %d cpus: pull from %d, want %d", tc.set, tc.ranks, tc.cpus, got, tc.want)
		}
	}
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
			c, err := Build(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }, opts)
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
		{func(c *Config) { c.CollSelect = "random" }, `Config.CollSelect="random": want learn, table, fixed or lottery`},
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
		_, err := Build(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, []Option{tc.opt})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v\nwant %q", err, tc.want)
		}
	}
}
