package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchFlags(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStderr string
	}{
		{"no benchmark", []string{"bench"}, 2, "want a benchmark name"},
		{"unknown benchmark", []string{"bench", "frobnicate"}, 2, "want a benchmark name"},
		{"bad sizes", []string{"bench", "pingpong", "--sizes", "8,lots"}, 2, `--sizes: size "lots"`},
		{"huge size", []string{"bench", "pingpong", "--sizes", "2G"}, 2, "larger than 1G"},
		{"zero iterations", []string{"bench", "pingpong", "--iters", "0"}, 2, "--iters must be at least 1"},
		{"bad transport", []string{"bench", "pingpong", "--transport", "carrier-pigeon", "--sizes", "8"}, 2, `--transport "carrier-pigeon"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.wantStderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, tc.code, tc.wantStderr)
			}
		})
	}
}

// TestBenchJSON runs the ping-pong on both transports (tcp starts two
// processes of this binary through the launcher) and checks the JSON shape
// the documentation promises: exactly one object with these keys.
func TestBenchJSON(t *testing.T) {
	for _, transport := range []string{"inproc", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			r := runCLI(t, "bench", "pingpong", "--transport", transport, "--sizes", "8,64K", "--iters", "20", "--json")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
				t.Fatalf("not one line: %q", r.stdout)
			}
			var rep struct {
				Bench     string `json:"bench"`
				Transport string `json:"transport"`
				Method    string `json:"method"`
				Ranks     int    `json:"ranks"`
				Results   []struct {
					Bytes         int     `json:"bytes"`
					LatencyUS     float64 `json:"latency_us"`
					BandwidthMBps float64 `json:"bandwidth_MBps"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatalf("%v: %q", err, r.stdout)
			}
			if rep.Bench != "pingpong" || rep.Transport != transport || rep.Method != "auto" || rep.Ranks != 2 ||
				len(rep.Results) != 2 || rep.Results[1].Bytes != 64<<10 || rep.Results[0].LatencyUS <= 0 ||
				rep.Results[1].BandwidthMBps <= 0 {
				t.Fatalf("report %+v", rep)
			}
		})
	}
}
