package conformance

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/profile/profiletest"
	"github.com/commtune/commtune/internal/topo"
)

// showPolicy: each rank prints how its messages to the other travel, then
// they exchange one 150000-byte message each way and report how it went.
func showPolicy(ctx context.Context, c *commtune.Comm, ep control.Endpoint) error {
	peer := 1 - c.Rank()
	p := ep.Policy(peer)
	var large []string
	for _, l := range p.Large {
		large = append(large, fmt.Sprintf("%s from %d", l.Method, l.Min))
	}
	fmt.Printf("rank %d: %s: eager up to %d, iovec from %d, large [%s]\n",
		c.Rank(), ep.Transport(peer), p.Rendezvous, p.Iovec, strings.Join(large, ", "))
	b := make([]byte, 150000)
	if _, err := c.Sendrecv(ctx, b, peer, 1, make([]byte, len(b)), peer, 1); err != nil {
		return err
	}
	fmt.Printf("rank %d: rendezvous sends %d\n", c.Rank(), ep.Stats().RendezvousSends)
	return nil
}

// TestProfileApplied runs jobs on a profile with known thresholds
// (profiletest.Known): every peer's policy must be the profile's, and
// explicit settings must override it. Without a usable profile a job says
// so once; with one, it says nothing.
func TestProfileApplied(t *testing.T) {
	fp, _, err := config.Platform()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := profiletest.Known(fp).Save(path); err != nil {
		t.Fatal(err)
	}
	hint := "commtune: no tuning profile for this machine"
	tests := []struct {
		name  string
		env   []string
		want  []string
		hints int
	}{
		{"tcp from the profile", []string{"COMMTUNE_TRANSPORTS=tcp", "COMMTUNE_PROFILE=" + path},
			[]string{"tcp: eager up to 195999, iovec from 1000, large []", "rendezvous sends 0"}, 0},
		{"shm from the profile", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_PROFILE=" + path},
			[]string{"shm: eager up to 101999, iovec from 1, large [copy from 102000, cachefree from 1200000]", "rendezvous sends 1"}, 0},
		{"explicit settings win", []string{"COMMTUNE_TRANSPORTS=tcp", "COMMTUNE_PROFILE=" + path, "COMMTUNE_RNDV_THRESHOLD=64K"},
			[]string{"tcp: eager up to 65536, iovec from 1000, large []", "rendezvous sends 1"}, 0},
		{"explicit shm method wins", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_PROFILE=" + path, "COMMTUNE_SHM_METHOD=copy", "COMMTUNE_SHM_EAGER=200K"},
			[]string{"shm: eager up to 204800, iovec from 1, large [copy from 204801]", "rendezvous sends 0"}, 0},
		{"no profile: defaults and one hint", []string{"COMMTUNE_TRANSPORTS=tcp", "COMMTUNE_PROFILE=" + path + ".absent"},
			[]string{"tcp: eager up to 65536, iovec from 2048, large []"}, 1},
		{"profile off: defaults, no hint", []string{"COMMTUNE_TRANSPORTS=tcp", "COMMTUNE_PROFILE=off"},
			[]string{"tcp: eager up to 65536, iovec from 2048"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runJob(t, 2, "policy", "", tc.env...)
			if err != nil {
				t.Fatalf("job: %v\n%s", err, out)
			}
			for r := 0; r < 2; r++ {
				for _, w := range tc.want {
					if line := fmt.Sprintf("rank %d: %s", r, w); !strings.Contains(out, line) {
						t.Fatalf("output lacks %q:\n%s", line, out)
					}
				}
			}
			if n := strings.Count(out, hint); n != tc.hints {
				t.Fatalf("%d hint lines, want %d:\n%s", n, tc.hints, out)
			}
			if tc.hints == 0 && strings.Contains(out, "commtune:") {
				t.Fatalf("unexpected message:\n%s", out)
			}
		})
	}
}

// TestAutoFollowsTopology: without a profile, a job's shm policy is seed
// 004's rule applied to this machine's topology as package topo reads it
// (README, COMMTUNE_SHM_METHOD): cma when the two ranks share no cache,
// else copy, and cachefree from DMA_min. Ranks are not pinned, so each may
// run on any CPU this process may.
func TestAutoFollowsTopology(t *testing.T) {
	machine, err := topo.Read()
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := topo.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	out, err := runJob(t, 2, "policy", "", "COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_PROFILE=off")
	if err != nil {
		t.Fatalf("job: %v\n%s", err, out)
	}
	const eager = commtune.DefaultShmEager
	method := "copy"
	if machine.Sharing(cpus, cpus) == topo.SharingNone && !strings.Contains(out, "single-copy transfers (CMA, process_vm_readv) are unavailable") {
		method = "pull"
	}
	large := fmt.Sprintf("%s from %d", method, eager+1)
	if d := machine.DMAMin(cpus, cpus); d > 0 {
		large += fmt.Sprintf(", cachefree from %d", max(d, eager+1))
	}
	for r := 0; r < 2; r++ {
		want := fmt.Sprintf("rank %d: shm: eager up to %d, iovec from 1, large [%s]", r, eager, large)
		if !strings.Contains(out, want) {
			t.Fatalf("caches from %s, sharing %v, DMA_min %d: want %q in\n%s", machine.CacheSource, machine.Sharing(cpus, cpus), machine.DMAMin(cpus, cpus), want, out)
		}
	}
	t.Logf("caches from %s, sharing %v: %s", machine.CacheSource, machine.Sharing(cpus, cpus), large)
}
