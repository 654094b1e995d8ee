package conformance

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHeatExample runs examples/heat on 4 ranks under commtune's launcher
// (one node) and under Hydra across two network namespaces (two "nodes" of
// 2 ranks, each with its own shared table): the example fails unless heat
// is conserved, and every rank must report.
func TestHeatExample(t *testing.T) {
	dir := t.TempDir()
	heat, commtune := filepath.Join(dir, "heat"), filepath.Join(dir, "commtune")
	for _, b := range [][2]string{{heat, "../../examples/heat"}, {commtune, "../../cmd/commtune"}} {
		if out, err := exec.Command("go", "build", "-o", b[0], b[1]).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", b[1], err, out)
		}
	}
	tests := []struct {
		name string
		cmd  func(t *testing.T) []string
	}{
		{"commtune run", func(*testing.T) []string { return []string{commtune, "run", "-n", "4", "--", heat} }},
		{"two namespaces", func(t *testing.T) []string {
			mpiexec, err := exec.LookPath("mpiexec.mpich")
			if err != nil {
				t.Skip("mpiexec.mpich not installed (apt-get install mpich); .ci/run installs it")
			}
			if _, err := exec.LookPath("ip"); err != nil || os.Geteuid() != 0 {
				t.Skip("needs root and iproute2 to make network namespaces")
			}
			nsA, nsB, vA, script := twoNamespaces(t)
			return []string{"ip", "netns", "exec", nsA, mpiexec, "-iface", vA, "-launcher", "ssh", "-launcher-exec", script,
				"-hosts", nsA + "," + nsB, "-n", "4", "-ppn", "2", heat}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			argv := tc.cmd(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "COMMTUNE_PROFILE=off")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
			}
			t.Logf("%s", out)
			if n := strings.Count(string(out), "rank "); n != 4 || !strings.Contains(string(out), "4 ranks, 200 steps") {
				t.Fatalf("want 4 ranks reporting and the total:\n%s", out)
			}
		})
	}
}
