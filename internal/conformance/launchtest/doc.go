// Package launchtest holds the end-to-end tests of commtune programs under
// launchers: commtune run, MPICH's mpiexec (Hydra), Open MPI's mpirun,
// Slurm's srun, across network namespaces and over shaped rails; the
// examples run under them, and jobs a rank of which aborts. They are
// apart from the semantics suite so that the two run side by side.
package launchtest
