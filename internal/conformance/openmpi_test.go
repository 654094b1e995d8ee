package conformance

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// openMPIRun returns the command line that starts n ranks under Open MPI's
// mpirun (Debian's openmpi-bin, which .ci/run installs), or skips.
func openMPIRun(t *testing.T, n int) []string {
	t.Helper()
	mpirun, err := exec.LookPath("mpirun.openmpi")
	if err != nil {
		t.Skip("Open MPI's mpirun not installed (apt-get install openmpi-bin); .ci/run installs it")
	}
	args := []string{mpirun, "--oversubscribe", "-np", fmt.Sprint(n)}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-run-as-root")
	}
	return args
}

// pmixEncodings are the two wires a PMIx server speaks: the newest it
// offers, and v3's fixed-width one forced.
var pmixEncodings = []struct{ name, env string }{
	{"v41", "COMMTUNE_PMIX=auto"},
	{"v3", "COMMTUNE_PMIX=v3"},
}

// TestOpenMPI runs the example and the conformance suite's process mode
// under Open MPI's mpirun, whose PMIx server the ranks find by themselves:
// four ranks on this node over shared memory, in both PMIx encodings.
func TestOpenMPI(t *testing.T) {
	run := openMPIRun(t, 4)
	bin := buildExample(t)
	for _, enc := range pmixEncodings {
		t.Run(enc.name+"/example", func(t *testing.T) {
			out := runOpenMPI(t, append(run, bin), enc.env)
			if n := strings.Count(out, "ring ok; allreduce ok"); n != 4 || strings.Count(out, "shm to") != 4 {
				t.Fatalf("%d ranks reported success, want 4 over shared memory:\n%s", n, out)
			}
		})
		t.Run(enc.name+"/suite", func(t *testing.T) {
			if testing.Short() {
				t.Skip("the whole suite under mpirun takes a minute")
			}
			out := runOpenMPI(t, append(run, os.Args[0]), enc.env, RankModeEnv+"=suite", "COMMTUNE_TRANSPORTS=shm,tcp")
			if n := strings.Count(out, " cases passed"); n != 4 {
				t.Fatalf("%d ranks finished the suite, want 4", n)
			}
		})
	}
}

// runOpenMPI runs an mpirun command line with env added, fails the test
// unless it succeeds, and returns its output.
func runOpenMPI(t *testing.T, args []string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), append(env, "COMMTUNE_PROFILE=off", "GORACE=atexit_sleep_ms=0")...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// TestAbortOpenMPI: under Open MPI's mpirun, Abort ends the job through
// PMIx, in both encodings: mpirun exits with the code, the reason printed
// once, no rank left.
func TestAbortOpenMPI(t *testing.T) {
	run := openMPIRun(t, 4)
	for _, enc := range pmixEncodings {
		t.Run(enc.name, func(t *testing.T) {
			runAborted(t, 7, "openmpi-"+enc.name, append(run, os.Args[0]), enc.env)
		})
	}
}

// TestOpenMPITwoNamespaces runs the example under mpirun on two "hosts":
// network namespaces joined by a veth pair, mpirun's daemon started in
// the second through an rsh agent that enters it. The ranks learn their
// node from PMIx, so two per namespace share memory and reach the others
// over TCP across the veth, in both encodings; a fence there collects
// data across the two PMIx servers.
func TestOpenMPITwoNamespaces(t *testing.T) {
	run := openMPIRun(t, 4)
	if _, err := exec.LookPath("ip"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and iproute2 to make network namespaces")
	}
	bin := buildExample(t)
	nsA, nsB, _, agent := twoNamespaces(t)
	for _, enc := range pmixEncodings {
		t.Run(enc.name, func(t *testing.T) {
			args := append([]string{"ip", "netns", "exec", nsA}, run...)
			args = append(args, "--mca", "plm_rsh_agent", agent, "--mca", "plm_rsh_no_tree_spawn", "1",
				"--mca", "oob_tcp_if_include", "10.77.0.0/24", "--host", nsA+":2,"+nsB+":2",
				"-x", "COMMTUNE_PROFILE", "-x", "COMMTUNE_PMIX", bin)
			checkTwoHosts(t, runOpenMPI(t, args, enc.env))
		})
	}
}
