package commtune

import (
	"os"
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
		{"aggregate zero", map[string]string{EnvAggregate: "0"}, nil, EnvAggregate},
		{"aggregate huge", map[string]string{EnvAggregate: "2M"}, nil, EnvAggregate},
		{"aggregate junk", map[string]string{EnvAggregate: "often"}, nil, EnvAggregate},
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
		if err != nil && !strings.Contains(err.Error(), "COMMTUNE_") {
			t.Errorf("%v: does not name the variable", err)
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
