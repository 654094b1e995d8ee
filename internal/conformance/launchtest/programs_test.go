package launchtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// buildAll compiles each package (a path from this directory) into the
// test's temporary directory and returns the binaries, in order.
func buildAll(t *testing.T, pkgs ...string) []string {
	t.Helper()
	dir := t.TempDir()
	bins := make([]string, len(pkgs))
	for i, p := range pkgs {
		bins[i] = filepath.Join(dir, filepath.Base(p))
		if out, err := exec.Command("go", "build", "-o", bins[i], p).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", p, err, out)
		}
	}
	return bins
}

// hydraTwoNamespaces returns the command that runs argv under Hydra on
// n ranks, ppn in each of two network namespaces (twoNamespaces); it
// skips the test without mpiexec.mpich, root or iproute2.
func hydraTwoNamespaces(t *testing.T, n, ppn int, argv ...string) []string {
	mpiexec, err := exec.LookPath("mpiexec.mpich")
	if err != nil {
		t.Skip("mpiexec.mpich not installed (apt-get install mpich); .ci/run installs it")
	}
	if _, err := exec.LookPath("ip"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and iproute2 to make network namespaces")
	}
	nsA, nsB, vA, script := twoNamespaces(t)
	return append([]string{"ip", "netns", "exec", nsA, mpiexec, "-iface", vA, "-launcher", "ssh", "-launcher-exec", script,
		"-hosts", nsA + "," + nsB, "-n", strconv.Itoa(n), "-ppn", strconv.Itoa(ppn)}, argv...)
}
