package launchtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/testenv"
)

// TestHeatExample runs examples/heat on 4 ranks under commtune's launcher
// (one node) and under Hydra across two network namespaces (two "nodes" of
// 2 ranks, each with its own shared table): the example fails unless heat
// is conserved, and every rank must report.
func TestHeatExample(t *testing.T) {
	testenv.SkipReduced(t, "an example built without it, under launchers")
	bins := buildAll(t, "../../../examples/heat", "../../../cmd/commtune")
	heat, commtune := bins[0], bins[1]
	tests := []struct {
		name string
		cmd  func(t *testing.T) []string
	}{
		{"commtune run", func(*testing.T) []string { return []string{commtune, "run", "-n", "4", "--", heat} }},
		{"two namespaces", func(t *testing.T) []string { return hydraTwoNamespaces(t, 4, 2, heat) }},
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
