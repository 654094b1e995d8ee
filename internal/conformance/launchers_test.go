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

// buildExample compiles examples/allreduce (send/recv around a ring and an
// allreduce, each rank printing which transport reaches which rank).
func buildExample(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "allreduce")
	cmd := exec.Command("go", "build", "-o", bin, "../../examples/allreduce")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the example: %v\n%s", err, out)
	}
	return bin
}

// TestHydra runs the example under MPICH's mpiexec (Hydra), which .ci/run
// installs from Debian: PMI-1 on the inherited socket, PMI-1 through
// -pmi-port, and PMI-2 forced by COMMTUNE_PMI=2 on the same socket; over
// shared memory and over TCP.
func TestHydra(t *testing.T) {
	mpiexec, err := exec.LookPath("mpiexec.mpich")
	if err != nil {
		t.Skip("mpiexec.mpich not installed (apt-get install mpich); .ci/run installs it")
	}
	bin := buildExample(t)
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"pmi1", nil, nil, "shm to"},
		{"pmi-port", []string{"-pmi-port"}, nil, "shm to"},
		{"pmi2", nil, []string{"COMMTUNE_PMI=2"}, "shm to"},
		{"pmi2-tcp", nil, []string{"COMMTUNE_PMI=2", "COMMTUNE_TRANSPORTS=tcp"}, "tcp to"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := append([]string{"-launcher", "fork", "-n", "4"}, tc.args...)
			cmd := exec.CommandContext(ctx, mpiexec, append(args, bin)...)
			cmd.Env = append(os.Environ(), append(tc.env, "COMMTUNE_PROFILE=off")...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("mpiexec: %v\n%s", err, out)
			}
			t.Logf("%s", out)
			if n := strings.Count(string(out), "ring ok; allreduce ok"); n != 4 || !strings.Contains(string(out), tc.want) {
				t.Fatalf("%d ranks reported success, want 4 with %q:\n%s", n, tc.want, out)
			}
		})
	}
}
