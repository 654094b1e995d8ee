package launchtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/auth"
	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/driver/tcp"
	"github.com/commtune/commtune/internal/syncbuf"
	"github.com/commtune/commtune/internal/testenv"
)

// buildExample compiles examples/allreduce (send/recv around a ring and an
// allreduce, each rank printing which transport reaches which rank).
func buildExample(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "allreduce")
	cmd := exec.Command("go", "build", "-o", bin, "../../../examples/allreduce")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the example: %v\n%s", err, out)
	}
	return bin
}

// TestHydra runs the example under MPICH's mpiexec (Hydra), which .ci/run
// installs from Debian: PMI-1 on the inherited socket, PMI-1 through
// -pmi-port, and PMI-2 forced by COMMTUNE_PMI=2 on the same socket; over
// shared memory and over TCP.
func TestHydra(t *testing.T) {
	testenv.SkipUnderRace(t, "an example built without it, under Hydra")
	mpiexec, err := exec.LookPath("mpiexec.mpich")
	if err != nil {
		t.Skip("mpiexec.mpich not installed (apt-get install mpich); .ci/run installs it")
	}
	bin := buildExample(t)
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"pmi1", nil, nil, "shm to"},
		{"pmi-port", []string{"-pmi-port"}, nil, "shm to"},
		{"pmi2", nil, []string{"COMMTUNE_PMI=2"}, "shm to"},
		{"pmi2-tcp", nil, []string{"COMMTUNE_PMI=2", "COMMTUNE_TRANSPORTS=tcp"}, "tcp to"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := append([]string{"-launcher", "fork", "-n", "4"}, tc.args...)
			cmd := exec.CommandContext(ctx, mpiexec, append(args, bin)...)
			cmd.Env = append(os.Environ(), append(tc.env, "COMMTUNE_PROFILE=off")...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("mpiexec: %v\n%s", err, out)
			}
			t.Logf("%s", out)
			if n := strings.Count(string(out), "ring ok; allreduce ok"); n != 4 || !strings.Contains(string(out), tc.want) {
				t.Fatalf("%d ranks reported success, want 4 with %q:\n%s", n, tc.want, out)
			}
		})
	}
}

// TestTwoNamespaces runs the example on two "hosts": network namespaces
// joined by a veth pair, whose addresses are the only way between them.
// Hydra starts a proxy in each through -launcher-exec (a script that
// enters the namespace), two ranks per namespace. Ranks of one namespace
// must use shared memory and the others TCP — which can only cross the
// veth, and which they find by themselves: nothing names a rail.
func TestTwoNamespaces(t *testing.T) {
	testenv.SkipUnderRace(t, "an example built without it, under Hydra")
	mpiexec, err := exec.LookPath("mpiexec.mpich")
	if err != nil {
		t.Skip("mpiexec.mpich not installed (apt-get install mpich); .ci/run installs it")
	}
	if _, err := exec.LookPath("ip"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and iproute2 to make network namespaces")
	}
	bin := buildExample(t)
	nsA, nsB, vA, script := twoNamespaces(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", nsA, mpiexec, "-iface", vA,
		"-launcher", "ssh", "-launcher-exec", script, "-hosts", nsA+","+nsB, "-n", "4", "-ppn", "2", bin)
	cmd.Env = append(os.Environ(), "COMMTUNE_PROFILE=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mpiexec: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	checkTwoHosts(t, string(out))
}

// checkTwoHosts checks the example's output for four ranks, two per host:
// shared memory within a host, TCP between them.
func checkTwoHosts(t *testing.T, out string) {
	t.Helper()
	want := map[string]string{"0": "shm to 1; tcp to 2,3", "1": "shm to 0; tcp to 2,3", "2": "shm to 3; tcp to 0,1", "3": "shm to 2; tcp to 0,1"}
	for r, w := range want {
		line := "rank " + r + " of 4 on "
		i := strings.Index(out, line)
		if i < 0 || !strings.Contains(strings.SplitN(out[i:], "\n", 2)[0], w+"; ring ok; allreduce ok") {
			t.Fatalf("rank %s: want %q:\n%s", r, w, out)
		}
	}
}

// twoNamespaces makes two network namespaces joined by a veth pair, for
// the test's lifetime, and a Hydra -launcher-exec script that runs a
// proxy in the namespace named as its host. It returns the namespaces,
// the veth end in nsA (for mpiexec's -iface) and the script.
func twoNamespaces(t *testing.T) (nsA, nsB, vA, script string) {
	t.Helper()
	id := fmt.Sprint(os.Getpid() % 100000)
	nsA, nsB = "ctA"+id, "ctB"+id
	vA, vB := "vA"+id, "vB"+id
	addrA, addrB := "10.77.0.1", "10.77.0.2"
	run := func(args ...string) {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", nsA)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", nsA).Run() })
	run("netns", "add", nsB)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", nsB).Run() })
	run("link", "add", vA, "type", "veth", "peer", "name", vB)
	run("link", "set", vA, "netns", nsA)
	run("link", "set", vB, "netns", nsB)
	for _, x := range [][3]string{{nsA, vA, addrA}, {nsB, vB, addrB}} {
		run("-n", x[0], "addr", "add", x[2]+"/24", "dev", x[1])
		run("-n", x[0], "link", "set", x[1], "up")
		run("-n", x[0], "link", "set", "lo", "up")
	}
	return nsA, nsB, vA, nsExecScript(t, nsA, nsB)
}

// nsExecScript writes a Hydra -launcher-exec script that runs a proxy in
// the namespace named as its host, one of hosts.
func nsExecScript(t *testing.T, hosts ...string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "nsexec")
	body := fmt.Sprintf(`#!/bin/sh
# Hydra's -launcher-exec, called like ssh: [options] HOST COMMAND...
while [ "${1#-}" != "$1" ]; do shift; done
host=$1; shift
case " %s " in
*" $host "*) ;;
*) echo "nsexec: unknown host $host" >&2; exit 1 ;;
esac
exec ip netns exec "$host" sh -c "$*"
`, strings.Join(hosts, " "))
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// TestSlurm runs scripts/slurm-e2e.sh: a single-node Slurm (slurmctld,
// slurmd, munged) started for the test, the example under `srun -n 4`
// with --mpi=pmi2 and with --mpi=pmix (both PMIx encodings), then `srun -n 4` without PMI,
// which every task must refuse, then under each plugin a job one rank of
// which aborts (abortOne): it ends with the code, the reason printed once,
// no task left. .ci/run installs slurm-wlm and munge.
func TestSlurm(t *testing.T) {
	testenv.NeedSlurm(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	token := fmt.Sprintf("abort-slurm-%d", os.Getpid())
	cmd := exec.CommandContext(ctx, "../../../scripts/slurm-e2e.sh", "4")
	cmd.Env = append(os.Environ(), "SLURM_E2E_ALSO="+os.Args[0], "SLURM_E2E_ALSO_MPI=pmi2 pmix",
		conformance.RankModeEnv+"=abort", conformance.RankArgEnv+"="+token, "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("slurm-e2e.sh: %v", err)
	}
	noPMIx := strings.Contains(string(out), "slurm-e2e: this Slurm has no pmix plugin")
	for _, run := range []string{"srun -n 4 --mpi=pmi2 ", "srun -n 4 --mpi=pmix ", "COMMTUNE_PMIX=v3 srun -n 4 --mpi=pmix "} {
		t.Run(strings.TrimSpace(run), func(t *testing.T) {
			if noPMIx && strings.Contains(run, "pmix") {
				t.Skip("this Slurm has no pmix plugin (Debian's slurm-wlm has it)")
			}
			_, ran, _ := strings.Cut(string(out), "+ "+run)
			ran, _, _ = strings.Cut(ran, "\n+ ")
			if n := strings.Count(ran, "ring ok; allreduce ok"); n != 4 {
				t.Errorf("%d ranks reported success under %s, want 4", n, run)
			}
		})
	}
	if n := strings.Count(string(out), "without PMI: run srun --mpi=pmix or --mpi=pmi2"); n != 4 {
		t.Fatalf("%d tasks refused to run without PMI, want 4", n)
	}
	for _, mpi := range []string{"pmi2", "pmix"} {
		t.Run("abort/"+mpi, func(t *testing.T) {
			if noPMIx && mpi == "pmix" {
				t.Skip("this Slurm has no pmix plugin (Debian's slurm-wlm has it)")
			}
			_, abort, _ := strings.Cut(string(out), "+ srun -n 4 --mpi="+mpi+" "+os.Args[0])
			var code int
			var at int64
			status := "slurm-e2e: also (" + mpi + "): exit status "
			abort, after, ok := strings.Cut(abort, status)
			if !ok {
				t.Fatal("the abort job did not run")
			} else if _, err := fmt.Sscanf(after, "%d at %d", &code, &at); err != nil {
				t.Fatalf("reading the abort job's status: %v", err)
			}
			switch {
			case code == 128+9 && strings.Contains(abort, "Exited with exit code 7"):
				// srun's status is the worst of its tasks': when the step's
				// cancellation SIGKILLs a survivor before it exits on its
				// own, that is 137 even though the aborting tasks exited
				// with the abort's code, which srun reports.
				t.Logf("srun exited 137: a survivor was killed before it exited; the aborting tasks exited with 7")
				code = 7
			case code == 128+9 && mpi == "pmi2" && strings.Contains(abort, "aborted the job with code 7"):
				// PMI-2's abort carries no code: slurmstepd cancels the step
				// at once, and when that SIGKILLs the aborting task too
				// before it exits, the code is only in the task's own
				// line, which the user sees.
				t.Logf("srun exited 137: the step was cancelled before the aborting task exited; it said code 7")
				code = 7
			}
			checkAborted(t, abort, code, 7, time.Unix(0, at), token, abortBound)
		})
	}
}

// hold keeps a 2-rank job up until the file arg exists: rank 0 says
// its pid and waits for rank 1's message, which rank 1 sends once the file
// appears (an intruder test works on the job meanwhile).
func hold(ctx context.Context, c *commtune.Comm, flag string) error {
	if c.Rank() == 0 {
		fmt.Printf("rank 0: holding, pid %d\n", os.Getpid())
		_, err := c.Recv(ctx, nil, 1, 3)
		return err
	}
	for {
		if _, err := os.Stat(flag); err == nil {
			return c.Send(ctx, nil, 0, 3)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIntruderRefused starts a 2-rank TCP job under Hydra; while rank 0
// waits, a process outside the job finds rank 0's listening ports and
// tries to join as rank 1 with a secret of its own. Every attempt must be
// refused by the handshake (auth.ErrDenied), and the job still completes.
func TestIntruderRefused(t *testing.T) {
	mpiexec, err := exec.LookPath("mpiexec.mpich")
	if err != nil {
		t.Skip("mpiexec.mpich not installed (apt-get install mpich); .ci/run installs it")
	}
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("needs ss (iproute2) to find the rank's ports")
	}
	flag := filepath.Join(t.TempDir(), "intruder-done")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpiexec, "-launcher", "fork", "-n", "2", os.Args[0])
	cmd.Env = append(os.Environ(), conformance.RankModeEnv+"=hold", conformance.RankArgEnv+"="+flag, "COMMTUNE_TRANSPORTS=tcp",
		"COMMTUNE_PROFILE=off", "GORACE=atexit_sleep_ms=0")
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := ""
	for pid == "" {
		if ctx.Err() != nil {
			t.Fatalf("rank 0 never got ready:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
		if _, rest, ok := strings.Cut(out.String(), "rank 0: holding, pid "); ok {
			pid, _, _ = strings.Cut(rest, "\n")
		}
	}
	ss, err := exec.Command("ss", "-H", "-ltnp").Output()
	if err != nil {
		t.Fatal(err)
	}
	var ports []string
	for _, line := range strings.Split(string(ss), "\n") {
		// Commtune's rail listens on 127.0.0.1 (COMMTUNE_RAILS' default);
		// the rank also holds sockets Hydra let it inherit.
		if f := strings.Fields(line); len(f) >= 4 && strings.Contains(line, "pid="+pid+",") && strings.HasPrefix(f[3], "127.0.0.1:") {
			ports = append(ports, f[3])
		}
	}
	if len(ports) == 0 {
		t.Fatalf("no listening port for pid %s:\n%s", pid, ss)
	}
	t.Logf("rank 0 (pid %s) listens on %v", pid, ports)
	for _, addr := range ports {
		if err := intrude(ctx, addr); !errors.Is(err, auth.ErrDenied) {
			t.Fatalf("joining rank 0 at %s without the job secret: %v, want auth.ErrDenied", addr, err)
		}
		t.Logf("refused at %s", addr)
	}
	// Rank 0 logs a rejection after refusing it, and logs nothing once it
	// is closing: the job ends only when the line is out (or time is up,
	// and the check below fails).
	for !strings.Contains(out.String(), "rejected connection") && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("job after the intrusion: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "rejected connection") {
		t.Fatalf("rank 0 did not log the rejection:\n%s", out.String())
	}
	t.Logf("%s", out.String())
}

// intrude tries to join a job as its rank 1 with a secret of its own.
func intrude(ctx context.Context, addr string) error {
	secret, err := auth.NewSecret()
	if err != nil {
		return err
	}
	tr, err := tcp.Listen(tcp.Config{Rank: 1, Size: 2, Secret: secret, Handler: nopHandler{}, ConnectTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer tr.Close()
	return tr.Connect(ctx, [][]string{{addr}, tr.Addrs()})
}

// nopHandler receives nothing: the intruder never gets that far.
type nopHandler struct{}

func (nopHandler) Packet(int, []byte) error { return nil }
func (nopHandler) Region(int, uint64, int64, int) ([]byte, error) {
	return nil, errors.New("no regions")
}
func (nopHandler) PutDone(int, uint64, int64, int) {}
func (nopHandler) Idle(driver.Rail, error)         {}
func (nopHandler) PeerLost(int, error)             {}
