package launchtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/testenv"
)

// TestRailBed runs on scripts/railbed.sh's test bed: two network
// namespaces joined by an 800 Mbit and a 400 Mbit rail (tc tbf). Under
// Hydra, one rank in each, the ranks find both rails by themselves,
// sample each (commtune sample --in-job), and bench multirail measures
// each rail alone and the three splits. The test requires the rails found
// and named by their interfaces, and the curves split to give the faster
// rail the larger chunk; the bandwidths are logged, not judged (they are
// the benchmark's business).
func TestRailBed(t *testing.T) {
	mpiexec, err := exec.LookPath("mpiexec.mpich")
	if err != nil {
		t.Skip("mpiexec.mpich not installed (apt-get install mpich); .ci/run installs it")
	}
	if _, err := exec.LookPath("tc"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and iproute2 (ip, tc) for the test bed")
	}
	if testing.Short() {
		t.Skip("samples two shaped rails for about a minute; skipped with -short")
	}
	testenv.SkipUnderRace(t, "bandwidths of shaped rails, sampled")
	id := fmt.Sprintf("t%d", os.Getpid()%100000)
	bed := func(args ...string) {
		cmd := exec.Command("../../../scripts/railbed.sh", args...)
		cmd.Env = append(os.Environ(), "RAILBED_ID="+id)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("railbed.sh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	bed("up", "800mbit", "400mbit")
	t.Cleanup(func() { bed("down") })
	bin := filepath.Join(t.TempDir(), "commtune")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/commtune").CombinedOutput(); err != nil {
		t.Fatalf("building commtune: %v\n%s", err, out)
	}
	nsA, nsB := id+"A", id+"B"
	script := nsExecScript(t, nsA, nsB)
	prof := filepath.Join(t.TempDir(), "profile.json")
	job := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		argv := append([]string{"netns", "exec", nsA, mpiexec, "-iface", id + "r0", "-launcher", "ssh",
			"-launcher-exec", script, "-hosts", nsA + "," + nsB, "-n", "2", "-ppn", "1",
			"-genv", "COMMTUNE_PROFILE", prof, bin}, args...)
		out, err := exec.CommandContext(ctx, "ip", argv...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := job("sample", "--in-job", "--quick")
	if !strings.Contains(out, "tcp curves (2 rails)") {
		t.Fatalf("sampling did not find two rails:\n%s", out)
	}
	out = job("bench", "multirail", "--in-job", "--rounds", "1", "--sizes", "4M", "--json")
	var rep bench.MultirailReport
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); err != nil {
		t.Fatalf("reading the report: %v\n%s", err, out)
	}
	t.Logf("%+v", rep)
	if want := []string{id + "r0/ipv4", id + "r1/ipv4"}; !slices.Equal(rep.Rails, want) {
		t.Fatalf("rails %v, want %v", rep.Rails, want)
	}
	for _, row := range rep.Rows {
		if row.Mode == "curves" && (len(row.Chunks) != 2 || row.Chunks[0] <= row.Chunks[1] || row.Chunks[1] == 0) {
			t.Fatalf("curves split 4 MiB as %v: want the 800 Mbit rail to take more, the 400 Mbit one some", row.Chunks)
		}
	}
}
