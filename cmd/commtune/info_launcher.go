package main

import (
	"fmt"
	"io"
	"os"

	"github.com/commtune/commtune/internal/boot"
)

// launcherInfo is the launcher section of `commtune info`: what started
// this process and the protocol a job would speak to it, from the
// environment alone (run it under the launcher: `mpirun -np 1 commtune
// info --launcher`, `srun --mpi=pmix commtune info --launcher`).
type launcherInfo struct {
	boot.Launch
	Order string `json:"order"`
}

const launcherOrder = "commtune run (COMMTUNE_BOOT), then PMI-1/PMI-2 (PMI_FD or PMI_PORT: MPICH's Hydra, srun --mpi=pmi2), " +
	"then PMIx (PMIX_NAMESPACE: Open MPI's mpirun, srun --mpi=pmix; encoding from PMIX_SERVER_URI41, _URI4, _URI3, or COMMTUNE_PMIX), then one rank alone"

func collectLauncher(infoOptions) (infoReport, error) {
	return &launcherInfo{Launch: boot.Describe(os.LookupEnv), Order: launcherOrder}, nil
}

func (l *launcherInfo) writeText(w io.Writer) error {
	fmt.Fprintf(w, "Launcher: %s\n", l.Launcher)
	if l.Protocol != "" {
		fmt.Fprintf(w, "  protocol: %s\n", l.Protocol)
	}
	if l.Detail != "" {
		fmt.Fprintf(w, "  found by: %s\n", l.Detail)
	}
	if l.Error != "" {
		fmt.Fprintf(w, "  a job here fails: %s\n", l.Error)
	}
	_, err := fmt.Fprintf(w, "  order tried: %s\n", l.Order)
	return err
}
