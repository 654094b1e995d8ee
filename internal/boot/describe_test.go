package boot

import (
	"strings"
	"testing"
)

// TestDescribe: each launcher's variables are named as Discover would
// take them, with the protocol, and a bad setting as the error a job
// would meet.
func TestDescribe(t *testing.T) {
	uri := "1234.0;tcp4://127.0.0.1:5000"
	tests := []struct {
		name     string
		env      map[string]string
		source   string
		launcher string
		protocol string
		err      string
	}{
		{"alone", nil, SourceSingleton, "none", "", ""},
		{"commtune", map[string]string{EnvBoot: "127.0.0.1:1"}, SourceCommtune, "commtune run", "commtune kvs", ""},
		{"hydra", map[string]string{EnvPMIFD: "6"}, SourcePMI, "MPICH Hydra (mpiexec)", "PMI-1", ""},
		{"slurm-pmi2", map[string]string{EnvPMIFD: "6", EnvPMIJobID: "3.0"}, SourcePMI, "Slurm srun --mpi=pmi2", "PMI-2", ""},
		{"pmi2-port", map[string]string{EnvPMIPort: "h:1", EnvPMIVersion: "2"}, SourcePMI, "MPICH Hydra (mpiexec)", "", "PMI_FD"},
		{"mpirun", map[string]string{EnvPMIxNamespace: "1234", EnvPMIxRank: "0", "PMIX_SERVER_URI41": uri, "PMIX_SERVER_URI3": uri, "OMPI_COMM_WORLD_SIZE": "2"},
			SourcePMIx, "Open MPI mpirun", "PMIx v41", ""},
		{"mpirun-v3", map[string]string{EnvPMIxNamespace: "1234", EnvPMIxRank: "0", "PMIX_SERVER_URI41": uri, "PMIX_SERVER_URI3": uri, EnvPMIxEncoding: "v3"},
			SourcePMIx, "a PMIx server", "PMIx v3", ""},
		{"psquash", map[string]string{EnvPMIxNamespace: "1234", EnvPMIxRank: "0", "PMIX_SERVER_URI41": uri, "PMIX_SERVER_URI3": uri, EnvPMIxPsquash: "native"},
			SourcePMIx, "a PMIx server", "PMIx v3", ""},
		{"srun-pmix", map[string]string{EnvPMIxNamespace: "slurm.pmix.3.0", EnvPMIxRank: "1", "PMIX_SERVER_URI4": uri, "SLURM_STEP_ID": "0"},
			SourcePMIx, "Slurm srun --mpi=pmix", "PMIx v4", ""},
		{"pmix-v2-only", map[string]string{EnvPMIxNamespace: "1234", EnvPMIxRank: "0", "PMIX_SERVER_URI21": uri}, SourcePMIx, "a PMIx server", "", "only the v2 wire"},
		{"pmix-bad-knob", map[string]string{EnvPMIxNamespace: "1234", EnvPMIxRank: "0", "PMIX_SERVER_URI41": uri, EnvPMIxEncoding: "v9"}, "", "?", "", "v41, v4, v3 or auto"},
		{"pmix-usock", map[string]string{EnvPMIxNamespace: "1234", EnvPMIxRank: "0", "PMIX_SERVER_URI41": "1234.0;usock:///tmp/x"}, SourcePMIx, "a PMIx server", "", "not a tcp address"},
		{"pmix-munge-only", map[string]string{EnvPMIxNamespace: "1234", EnvPMIxRank: "0", "PMIX_SERVER_URI41": uri, EnvPMIxSecurity: "munge"}, SourcePMIx, "a PMIx server", "", "no native credential"},
		{"pmix-bad-rank", map[string]string{EnvPMIxNamespace: "1234", EnvPMIxRank: "x", "PMIX_SERVER_URI41": uri}, SourcePMIx, "a PMIx server", "", "is not a rank"},
		{"mpirun-in-slurm", map[string]string{EnvPMIxNamespace: "1234", EnvPMIxRank: "0", "PMIX_SERVER_URI41": uri, "OMPI_COMM_WORLD_SIZE": "2", "SLURM_STEP_ID": "0"},
			SourcePMIx, "Open MPI mpirun", "PMIx v41", ""},
		{"slurm-no-pmi", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "4"}, "slurm", "Slurm srun without PMI", "", "--mpi=pmix"},
		{"bad-pmi-knob", map[string]string{EnvPMIVersion: "7"}, "", "?", "", "COMMTUNE_PMI"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := Describe(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if l.Source != tc.source || l.Launcher != tc.launcher || l.Protocol != tc.protocol {
				t.Errorf("got %+v, want source %q launcher %q protocol %q", l, tc.source, tc.launcher, tc.protocol)
			}
			if tc.err == "" && l.Error != "" || tc.err != "" && !strings.Contains(l.Error, tc.err) {
				t.Errorf("error %q, want one with %q", l.Error, tc.err)
			}
		})
	}
}
