package mpiref

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/testenv"
)

func TestFindRefusesUnknown(t *testing.T) {
	if _, err := Find("lam"); err == nil {
		t.Fatal("Find(lam) succeeded")
	}
}

// TestReference builds the C benchmark with every installed MPI and runs a
// short ping-pong, the startup job and each collective, in both timings,
// through its launcher, checking that each size is reported with a
// positive time and a consistent summary, and that its statistics are
// internal/bench's.
func TestReference(t *testing.T) {
	testenv.SkipReduced(t, "C programs under Open MPI's and MPICH's launchers")
	found := 0
	for _, name := range []string{"openmpi", "mpich"} {
		impl, err := Find(name)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		found++
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			bin, err := impl.Build(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			checkSummaries(t, ctx, impl, bin)
			pp, err := impl.PingPong(ctx, bin, []int{8, 4096}, 50)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range pp {
				if r.Bytes != []int{8, 4096}[i] || r.LatencyUS <= 0 || r.RoundTrips != 50 || !ordered(r.Summary()) {
					t.Errorf("ping-pong result %d: %+v", i, r)
				}
			}
			overTCP := impl
			overTCP.TCP = true
			if pp, err := overTCP.PingPong(ctx, bin, []int{8}, 50); err != nil || len(pp) != 1 || pp[0].LatencyUS <= 0 {
				t.Errorf("ping-pong over TCP: %+v, %v", pp, err)
			}
			// Sampled as bench startup does: what the launcher starts, not
			// the launcher; MPICH's starts a proxy, which starts the ranks.
			procs := 3
			if name == "mpich" {
				procs = 4
			}
			st, err := bench.MeasureStartup(bench.SystemMemory, time.Millisecond, func(root func(int)) (bench.StartupTimes, error) {
				return impl.Startup(ctx, bin, 3, []string{bench.EnvStartupAlltoall + "=64"}, root)
			})
			if err != nil || st.FirstCollective <= 0 || st.FirstCollective > st.Wall || st.Mem.Procs != procs || st.Mem.Pss <= 0 {
				t.Errorf("startup of 3 ranks: %+v, %v", st, err)
			}
			for _, timing := range bench.Timings {
				for _, op := range Ops {
					res, err := impl.Coll(ctx, bin, 3, op, []int{16, 1024}, 20, timing)
					if err != nil {
						t.Fatalf("%s %s: %v", op, timing, err)
					}
					for _, r := range res {
						if r.TimeUS <= 0 || r.Algo != name || r.Calls != 20 || !ordered(r.Summary()) {
							t.Errorf("%s %s: %+v", op, timing, r)
						}
					}
				}
			}
		})
	}
	if found == 0 {
		t.Skip("no MPI installed (openmpi-bin libopenmpi-dev or mpich): nothing to compare against")
	}
}

// ordered reports whether s's figures are positive and in the order a
// distribution's are: the median at most the p90, at most the p99, at
// most the maximum, and the mean within [min, max].
func ordered(s bench.Summary) bool {
	return s.P50 > 0 && s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.Max && s.Mean > 0 && s.Mean <= s.Max
}

// checkSummaries has the C program summarize known times and compares
// its figures with bench.SummaryOf's: the same mean and quantile rule.
func checkSummaries(t *testing.T, ctx context.Context, impl Impl, bin string) {
	t.Helper()
	tests := [][]float64{
		{1000},
		{3000, 1000, 2000},
		{5000, 1000, 4000, 2000, 3000, 100000},
		{1200, 1200, 1300, 900, 250000, 1100, 1000, 1250, 1150, 1050, 980, 1020, 999000},
	}
	for _, ns := range tests {
		var got bench.CollResult
		args := make([]int, len(ns))
		for k, v := range ns {
			args[k] = int(v)
		}
		err := impl.run(ctx, bin, 1, func(line []byte) error { return json.Unmarshal(line, &got) }, "summary", sizeArg(args))
		if err != nil {
			t.Fatal(err)
		}
		want := bench.SummaryOf(ns)
		g := got.Summary()
		// The program prints 4 decimals of a microsecond.
		if g.Calls != want.Calls || !near(g.Mean, want.Mean) || !near(g.P50, want.P50) || !near(g.P90, want.P90) ||
			!near(g.P99, want.P99) || !near(g.Max, want.Max) {
			t.Errorf("summary of %v: C %+v, Go %+v", ns, g, want)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 0.00005+1e-9*math.Abs(b) }

// TestCommandTransport checks how each launcher is told to keep ranks of
// one node on TCP, and that nothing is added otherwise.
func TestCommandTransport(t *testing.T) {
	for _, tc := range []struct {
		impl     Impl
		wantArgs string // in the argument list, or "" for none of tcp's
		wantEnv  string // in the environment, or ""
	}{
		{Impl{Name: "openmpi", Run: "mpirun", TCP: true}, "--mca btl tcp,self", ""},
		{Impl{Name: "openmpi", Run: "mpirun"}, "", ""},
		{Impl{Name: "mpich", Run: "mpiexec", TCP: true}, "", "MPIR_CVAR_NOLOCAL=1"},
		{Impl{Name: "mpich", Run: "mpiexec"}, "", ""},
	} {
		cmd := tc.impl.command(context.Background(), 2, "bench", "pingpong")
		args := strings.Join(cmd.Args, " ")
		if tc.wantArgs != "" && !strings.Contains(args, tc.wantArgs) || tc.wantArgs == "" && strings.Contains(args, "btl") {
			t.Errorf("%s TCP=%v: args %q", tc.impl.Name, tc.impl.TCP, args)
		}
		env := strings.Join(cmd.Env, "\n")
		if tc.wantEnv != "" && !strings.Contains(env, tc.wantEnv) || tc.wantEnv == "" && strings.Contains(env, "MPIR_CVAR_NOLOCAL=1") {
			t.Errorf("%s TCP=%v: environment lacks or has %q", tc.impl.Name, tc.impl.TCP, tc.wantEnv)
		}
	}
}

// TestStartupCommand checks, without an MPI, that the reference's startup
// job reads its start where bench startup puts it, and that a job of more
// ranks than processors is oversubscribed.
func TestStartupCommand(t *testing.T) {
	if !bytes.Contains(source, []byte(`getenv("`+bench.EnvStartupStart+`")`)) {
		t.Errorf("csrc/mpibench.c does not read %s", bench.EnvStartupStart)
	}
	n := runtime.NumCPU() + 1
	cmd := Impl{Name: "openmpi", Run: "mpirun"}.command(context.Background(), n, "bench", "startup")
	args := strings.Join(cmd.Args, " ")
	if !strings.Contains(args, "--oversubscribe") || !strings.HasSuffix(args, fmt.Sprintf("-n %d bench startup", n)) {
		t.Errorf("%d ranks on %d processors: %q", n, n-1, args)
	}
}
