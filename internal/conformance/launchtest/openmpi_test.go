package launchtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/testenv"
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
	testenv.SkipUnderRace(t, "jobs under Open MPI's mpirun")
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
			out := runOpenMPI(t, append(run, os.Args[0]), enc.env, conformance.RankModeEnv+"=suite", "COMMTUNE_TRANSPORTS=shm,tcp")
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
	out, err := tryOpenMPI(args, 5*time.Minute, env...)
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return out
}

// TestAbortOpenMPI: under Open MPI's mpirun, Abort ends the job through
// PMIx, in both encodings: mpirun exits with the code, the reason printed
// once, no rank left.
func TestAbortOpenMPI(t *testing.T) {
	testenv.SkipUnderRace(t, "jobs under Open MPI's mpirun")
	run := openMPIRun(t, 4)
	for _, enc := range pmixEncodings {
		t.Run(enc.name, func(t *testing.T) {
			runAborted(t, 7, openMPIAbortBound, "openmpi-"+enc.name, append(run, os.Args[0]), enc.env)
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
	testenv.SkipUnderRace(t, "jobs under Open MPI's mpirun")
	run := openMPIRun(t, 4)
	if _, err := exec.LookPath("ip"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and iproute2 to make network namespaces")
	}
	bin := buildExample(t)
	nsA, nsB, _, agent := twoNamespaces(t)
	t.Cleanup(func() { killNamespaces(t, nsA, nsB) }) // before the namespaces go
	for _, enc := range pmixEncodings {
		t.Run(enc.name, func(t *testing.T) {
			args := append([]string{"ip", "netns", "exec", nsA}, run...)
			args = append(args, "--mca", "plm_rsh_agent", agent, "--mca", "plm_rsh_no_tree_spawn", "1",
				"--mca", "oob_tcp_if_include", "10.77.0.0/24", "--host", nsA+":2,"+nsB+":2",
				"-x", "COMMTUNE_PROFILE", "-x", "COMMTUNE_PMIX", bin)
			for attempt := 1; ; attempt++ {
				out, err := tryOpenMPI(args, 45*time.Second, enc.env)
				t.Logf("%s", out)
				if err != nil && out == "" && attempt < 3 {
					// Open MPI's daemon for the second namespace, started through
					// the rsh agent, at times never reports back (about one run in
					// eight here), and mpirun waits for it forever: no rank has
					// started, so commtune is not yet involved.
					t.Logf("attempt %d: mpirun started no rank (%v); its daemons are stopped and it runs again", attempt, err)
					killNamespaces(t, nsA, nsB)
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", strings.Join(args, " "), err)
				}
				checkTwoHosts(t, out)
				break
			}
		})
	}
}

// tryOpenMPI runs an mpirun command line with env added, for at most
// timeout, and returns its output.
func tryOpenMPI(args []string, timeout time.Duration, env ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), append(env, "COMMTUNE_PROFILE=off", "GORACE=atexit_sleep_ms=0")...)
	cmd.WaitDelay = 5 * time.Second // a daemon it left may hold the output open
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// killNamespaces kills every process left in the network namespaces: a
// daemonized orted outlives the mpirun that started it.
func killNamespaces(t *testing.T, names ...string) {
	t.Helper()
	for _, ns := range names {
		out, _ := exec.Command("ip", "netns", "pids", ns).Output()
		for _, pid := range strings.Fields(string(out)) {
			if n, err := strconv.Atoi(pid); err == nil {
				if p, err := os.FindProcess(n); err == nil {
					p.Kill()
				}
			}
		}
	}
}
