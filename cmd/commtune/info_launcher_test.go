package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestInfoLauncher: `commtune info --launcher` names the launcher and the
// protocol its variables lead to, and says why a job would fail.
func TestInfoLauncher(t *testing.T) {
	uri := "77.0;tcp4://127.0.0.1:5000"
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{"alone", nil, []string{"Launcher: none"}},
		{"mpirun", []string{"PMIX_NAMESPACE=77", "PMIX_RANK=0", "PMIX_SERVER_URI41=" + uri, "PMIX_SERVER_URI3=" + uri, "OMPI_COMM_WORLD_SIZE=2"},
			[]string{"Launcher: Open MPI mpirun", "protocol: PMIx v41", "from PMIX_SERVER_URI41"}},
		{"mpirun-v3", []string{"PMIX_NAMESPACE=77", "PMIX_RANK=0", "PMIX_SERVER_URI41=" + uri, "PMIX_SERVER_URI3=" + uri, "COMMTUNE_PMIX=v3"},
			[]string{"protocol: PMIx v3", "from PMIX_SERVER_URI3"}},
		{"no-uri", []string{"PMIX_NAMESPACE=77", "PMIX_RANK=0"}, []string{"a job here fails: pmix: PMIX_NAMESPACE is set but no PMIX_SERVER_URI41"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := cliCommand("info", "--launcher")
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "PMI") && !strings.HasPrefix(kv, "COMMTUNE_BOOT=") && !strings.HasPrefix(kv, "COMMTUNE_PMI") &&
					!strings.HasPrefix(kv, "SLURM_") && !strings.HasPrefix(kv, "OMPI_") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, tc.env...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("commtune info --launcher: %v\n%s", err, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
