package main

import (
	"encoding/json"
	"strconv"
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
		{"coll without op", []string{"bench", "coll"}, 2, `--op "": want one of barrier, bcast`},
		{"coll unknown op", []string{"bench", "coll", "--op", "reduce_scatter"}, 2, `--op "reduce_scatter"`},
		{"coll bad algorithm", []string{"bench", "coll", "--op", "bcast", "--algo", "ring"}, 2, `--algo: bcast algorithm "ring": no family`},
		{"coll bad ranks", []string{"bench", "coll", "--op", "bcast", "-n", "0"}, 2, "-n 0: want 1 to 1024 ranks"},
		{"coll huge size", []string{"bench", "coll", "--op", "bcast", "--sizes", "1G"}, 2, "larger than 256M"},
		{"vs inproc", []string{"bench", "pingpong", "--transport", "inproc", "--vs", "mpi"}, 2, "--vs needs --transport tcp or shm"},
		{"vs zero rounds", []string{"bench", "pingpong", "--transport", "shm", "--vs", "mpi", "--rounds", "0"}, 2, "--rounds must be at least 1"},
		{"vs coll inproc", []string{"bench", "coll", "--op", "bcast", "--transport", "inproc", "--vs", "mpi"}, 2, "--vs needs processes"},
		{"vs coll no reference op", []string{"bench", "coll", "--op", "alltoallv", "--vs", "mpi"}, 2, "the reference benchmark has no alltoallv"},
		{"vs coll two algorithms", []string{"bench", "coll", "--op", "bcast", "--algo", "binomial,flat", "--vs", "mpi"}, 2, "--vs compares one algorithm"},
		{"coll bad transport", []string{"bench", "coll", "--op", "bcast", "--transport", "ib"}, 2, `--transport "ib"`},
		{"coll lottery bad timing", []string{"bench", "coll", "--op", "bcast", "--algo", "lottery", "--timing", "median"}, 2, `--timing: timing "median": want back-to-back or barrier`},
		{"coll bad timing", []string{"bench", "coll", "--op", "bcast", "--timing", "median"}, 2, `--timing: timing "median": want back-to-back or barrier`},
		{"coll more nodes than ranks", []string{"bench", "coll", "--op", "bcast", "-n", "2", "--nodes", "3"}, 2, "--nodes 3: want 1 to -n (2)"},
		{"coll nodes inproc", []string{"bench", "coll", "--op", "bcast", "--nodes", "2", "--transport", "inproc"}, 2, "--nodes runs processes"},
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
				Timing    string `json:"timing"`
				Results   []struct {
					Bytes         int     `json:"bytes"`
					LatencyUS     float64 `json:"latency_us"`
					BandwidthMBps float64 `json:"bandwidth_MBps"`
					MeanUS        float64 `json:"latency_mean_us"`
					P90US         float64 `json:"latency_p90_us"`
					P99US         float64 `json:"latency_p99_us"`
					MaxUS         float64 `json:"latency_max_us"`
					RoundTrips    int     `json:"round_trips"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatalf("%v: %q", err, r.stdout)
			}
			if rep.Bench != "pingpong" || rep.Transport != transport || rep.Method != "auto" || rep.Ranks != 2 || rep.Timing != "back-to-back" ||
				len(rep.Results) != 2 || rep.Results[1].Bytes != 64<<10 || rep.Results[0].LatencyUS <= 0 ||
				rep.Results[1].BandwidthMBps <= 0 {
				t.Fatalf("report %+v", rep)
			}
			for _, x := range rep.Results {
				if x.RoundTrips != 20 || x.MeanUS <= 0 || x.LatencyUS > x.P90US || x.P90US > x.P99US || x.P99US > x.MaxUS || x.MeanUS > x.MaxUS {
					t.Fatalf("result %+v", x)
				}
			}
		})
	}
}

// TestBenchCollJSON runs the collective benchmark on goroutine ranks and on
// processes and checks the JSON the documentation promises: one object,
// a result per algorithm and size, the table's choice marked.
func TestBenchCollJSON(t *testing.T) {
	for _, tc := range []struct {
		transport, op, algo, sizes, timing string
		want                               int
		nodes                              int // pretend nodes; 0: one
	}{
		{"inproc", "allgather", "all", "8,1K,4K,64K", "", (4*2+1)*4 + 2, 0}, // four families, pulled too, direct, and the node segment at 8 and 1K
		{"tcp", "allreduce", "reduce-bcast:binomial:seg=1K,ring", "8,4K", "barrier", 2 * 2, 0},
		{"inproc", "reducescatter", "all", "8,4K", "", 8 * 2, 0},
		{"inproc", "exscan", "recursive-doubling,linear", "8,4K", "", 2 * 2, 0},
		{"auto", "bcast", "binomial,hierarchical", "8,4K", "", 2 * 2, 2},
	} {
		t.Run(tc.transport+"/"+tc.op, func(t *testing.T) {
			args := []string{"bench", "coll", "--op", tc.op, "-n", "3", "--algo", tc.algo, "--sizes", tc.sizes, "--iters", "10", "--transport", tc.transport, "--json"}
			if tc.nodes > 0 {
				args = append(args, "--nodes", strconv.Itoa(tc.nodes))
			}
			timing := "back-to-back"
			if tc.timing != "" {
				args, timing = append(args, "--timing", tc.timing), tc.timing
			}
			r := runCLI(t, args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var rep struct {
				Bench     string `json:"bench"`
				Op        string `json:"op"`
				Ranks     int    `json:"ranks"`
				Transport string `json:"transport"`
				Timing    string `json:"timing"`
				Results   []struct {
					Algo   string  `json:"algo"`
					Bytes  int     `json:"bytes"`
					TimeUS float64 `json:"time_us"`
					MeanUS float64 `json:"mean_us"`
					P90US  float64 `json:"p90_us"`
					P99US  float64 `json:"p99_us"`
					MaxUS  float64 `json:"max_us"`
					Calls  int     `json:"calls"`
					Auto   bool    `json:"auto"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatalf("%v: %q", err, r.stdout)
			}
			if rep.Bench != "coll" || rep.Op != tc.op || rep.Ranks != 3 || rep.Transport != tc.transport || rep.Timing != timing || len(rep.Results) != tc.want {
				t.Fatalf("report %+v", rep)
			}
			autos := 0
			for _, x := range rep.Results {
				if x.TimeUS <= 0 || !strings.HasPrefix(x.Algo, tc.op+"/") || x.Calls != 20 ||
					x.TimeUS > x.P90US || x.P90US > x.P99US || x.P99US > x.MaxUS || x.MeanUS <= 0 || x.MeanUS > x.MaxUS {
					t.Fatalf("result %+v", x)
				}
				if x.Auto {
					autos++
				}
			}
			if sizes := len(strings.Split(tc.sizes, ",")); tc.algo == "all" && autos != sizes {
				t.Fatalf("%d results marked as the table's choice, want one per size: %+v", autos, rep.Results)
			}
		})
	}
}
