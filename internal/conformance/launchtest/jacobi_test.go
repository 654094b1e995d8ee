package launchtest

import (
	"cmp"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/testenv"
)

// TestJacobi3D runs examples/jacobi3d on 8 ranks under each way a job
// starts: commtune's launcher, MPICH's mpiexec (Hydra), and Hydra across
// two network namespaces, 4 ranks each with TCP between them. The example
// fails unless every rank's block equals the same iteration run on one
// rank, bit for bit; rank 0 reports the halo implementation it used.
func TestJacobi3D(t *testing.T) {
	testenv.SkipReduced(t, "an example built without it, under launchers")
	bins := buildAll(t, "../../../examples/jacobi3d", "../../../cmd/commtune")
	jacobi, commtune := bins[0], bins[1]
	// Enough iterations for the brute-force selection of the halo
	// implementation (3 samples each) to end, and more on the winner.
	args := []string{jacobi, "-grid", "24x20x16", "-iters", "100"}
	// Enough for the default selection's race (84 iterations) too.
	tests := []struct {
		name   string
		cmd    func(t *testing.T) []string // nil: skip (said why)
		method string                      // the halo selection; "" the default, learn
	}{
		{"commtune run", func(*testing.T) []string { return append([]string{commtune, "run", "-n", "8", "--"}, args...) }, "brute"},
		{"commtune run, default selection", func(*testing.T) []string { return append([]string{commtune, "run", "-n", "8", "--"}, args...) }, ""},
		{"mpiexec", func(t *testing.T) []string {
			mpiexec, err := exec.LookPath("mpiexec.mpich")
			if err != nil {
				t.Skip("mpiexec.mpich not installed (apt-get install mpich); .ci/run installs it")
			}
			return append([]string{mpiexec, "-launcher", "fork", "-n", "8"}, args...)
		}, "brute"},
		{"two namespaces", func(t *testing.T) []string { return hydraTwoNamespaces(t, 8, 4, args...) }, "brute"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			argv := tc.cmd(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "COMMTUNE_PROFILE=off", "COMMTUNE_HALO_STATE=off", "COMMTUNE_HALO_SAMPLES=3", "COMMTUNE_HALO_SELECT="+tc.method)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
			}
			t.Logf("%s", out)
			if !strings.Contains(string(out), "8 ranks as 2x2x2 blocks") || !strings.Contains(string(out), "same as one rank") {
				t.Fatalf("want 8 ranks as 2x2x2 blocks with the one-rank answer:\n%s", out)
			}
			if want := "chosen by " + cmp.Or(tc.method, "learn") + " after"; !strings.Contains(string(out), want) {
				t.Fatalf("want the halo implementation %q:\n%s", want, out)
			}
		})
	}
}
