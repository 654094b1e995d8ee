package boot

import "fmt"

// Launch says what started this process and how a job would talk to it,
// read from the environment alone: nothing is connected to.
type Launch struct {
	Source   string `json:"source"`          // as Job.Source: commtune, pmi, pmix, singleton
	Launcher string `json:"launcher"`        // who started the process, as far as its variables tell
	Protocol string `json:"protocol"`        // the wire Discover would speak ("" for a singleton)
	Detail   string `json:"detail"`          // the variables that decided it
	Error    string `json:"error,omitempty"` // why Discover would refuse this environment
}

// Describe reports what Discover would find, in its order, without
// connecting.
func Describe(lookup func(string) (string, bool)) Launch {
	if _, err := pmiSetting(lookup); err != nil {
		return Launch{Launcher: "?", Error: err.Error()}
	}
	if _, err := pmixSetting(lookup); err != nil {
		return Launch{Launcher: "?", Error: err.Error()}
	}
	if _, ok := lookup(EnvBoot); ok {
		return Launch{Source: SourceCommtune, Launcher: "commtune run", Protocol: "commtune kvs", Detail: EnvBoot + " names the launcher's key-value service"}
	}
	fd, hasFD := lookup(EnvPMIFD)
	port, hasPort := lookup(EnvPMIPort)
	if hasFD || hasPort {
		l := Launch{Source: SourcePMI, Launcher: "MPICH Hydra (mpiexec)"}
		if _, slurm := lookup(EnvPMIJobID); slurm {
			l.Launcher = "Slurm srun --mpi=pmi2"
		}
		if hasFD {
			l.Detail = fmt.Sprintf("%s=%s (an inherited socket)", EnvPMIFD, fd)
		} else {
			l.Detail = fmt.Sprintf("%s=%s", EnvPMIPort, port)
		}
		v, err := pmiVersion(lookup, hasFD)
		if err != nil {
			l.Error = err.Error()
			return l
		}
		l.Protocol = fmt.Sprintf("PMI-%d", v)
		return l
	}
	ns, hasNS := lookup(EnvPMIxNamespace)
	rank, hasRank := lookup(EnvPMIxRank)
	if hasNS || hasRank {
		l := Launch{Source: SourcePMIx, Launcher: pmixLauncher(lookup), Detail: fmt.Sprintf("namespace %q, rank %s", ns, rank)}
		_, ep, err := pmixEnv(lookup, ns, rank)
		if err != nil {
			l.Error = err.Error()
			return l
		}
		l.Protocol = "PMIx " + ep.bfrops
		l.Detail += fmt.Sprintf(", server %s from %s", ep.addr, ep.variable)
		if v, ok := lookup(EnvPMIxVersion); ok {
			l.Detail += ", server version " + v
		}
		return l
	}
	if err := slurmWithoutPMI(lookup); err != nil {
		return Launch{Source: "slurm", Launcher: "Slurm srun without PMI", Error: err.Error()}
	}
	return Launch{Source: SourceSingleton, Launcher: "none", Detail: "no launcher's variables: a job of one rank"}
}

// pmixLauncher guesses which PMIx server started the process from the
// variables each sets beside PMIx's own.
func pmixLauncher(lookup func(string) (string, bool)) string {
	// Open MPI first: inside a Slurm allocation its daemons are started
	// by srun, and its ranks inherit the step's variables.
	if _, ok := lookup("OMPI_COMM_WORLD_SIZE"); ok {
		return "Open MPI mpirun"
	}
	if _, ok := lookup("SLURM_STEP_ID"); ok {
		return "Slurm srun --mpi=pmix"
	}
	return "a PMIx server"
}
