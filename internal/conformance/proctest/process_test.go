package proctest

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/testenv"
)

// TestProcesses runs the semantics suite over real processes, on TCP and
// on shared memory (8 and 16 ranks on a 2-core machine are
// oversubscribed; 16 is a node's worth of ranks, most pairs of which never
// talk). Under the race detector, whose ranks run 5 to 20 times slower,
// the smaller jobs.
func TestProcesses(t *testing.T) {
	counts := testenv.Pick(map[string][]int{"tcp": {2, 3, 4}, "shm": {2, 4, 8, 16}}, map[string][]int{"tcp": {3}, "shm": {2, 4}})
	for _, tr := range conformance.Transports {
		for _, n := range counts[tr.Name] {
			t.Run(fmt.Sprintf("%s/n=%d", tr.Name, n), func(t *testing.T) {
				out, err := conformance.RunJob(n, "suite", "", tr.Env)
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			})
		}
	}
}

// TestStressProcesses: 2 to 32 processes exchange random messages (0–256
// KiB, random tags, any-source receives, every rank to every other) with
// every payload and the ordering rule checked. COMMTUNE_STRESS_MESSAGES sets the count (the acceptance run
// uses 200000); the default keeps CI short. Under the race detector, a
// tenth of the messages, and of the shm jobs the 2- and 8-rank ones.
func TestStressProcesses(t *testing.T) {
	n := conformance.CountFromEnv(t, "COMMTUNE_STRESS_MESSAGES", testenv.Pick(20000, 2000), 4000)
	// shm's auto method depends on the machine's caches; cma is forced once
	// so the receiver-pull protocol is always exercised.
	for _, w := range []struct {
		name  string
		env   []string
		ranks []int
	}{
		{"tcp", []string{"COMMTUNE_TRANSPORTS=tcp"}, []int{4}},
		{"shm", []string{"COMMTUNE_TRANSPORTS=shm,tcp"}, []int{2, 4, 8, 32}},
		{"shm-cma", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_METHOD=cma"}, []int{4}},
		// A budget spent by the first steps: every ring grows only as
		// its records force, and large messages stream through the
		// least ring (the copy method).
		{"shm-budget", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_BUDGET=4K", "COMMTUNE_SHM_METHOD=copy"}, []int{8}},
		// Pairs start on the inbound queues (as on nodes of more than
		// 16 ranks; 32 above does too): large messages by single copy,
		// or in fragments through the queue until the pair is busy
		// enough for a ring, then through the ring.
		{"shm-queue", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_QUEUE=on"}, []int{2, 8}},
		{"shm-queue-copy", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_QUEUE=on", "COMMTUNE_SHM_METHOD=copy"}, []int{4}},
	} {
		for _, ranks := range w.ranks {
			if testenv.Reduced() && w.name == "shm" && ranks != 2 && ranks != 8 {
				continue
			}
			t.Run(fmt.Sprintf("%s/n=%d", w.name, ranks), func(t *testing.T) {
				out, err := conformance.RunJob(ranks, "stress", strconv.Itoa(n), w.env...)
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				t.Logf("%d messages:\n%s", n, out)
			})
		}
	}
}

// TestRMAProcesses runs the one-sided cases, and those of the other calls
// made beside them (groups and communicators from them, sub-grids,
// synchronous sends, completion over sets, persistent requests), at 4 and
// 8 processes on each transport: windows reached through the targets'
// agents (tcp), by single copy and agents (NewWindow's on shm) and in
// place (AllocWindow's on one node).
func TestRMAProcesses(t *testing.T) {
	counts := testenv.Pick([]int{4, 8}, []int{4})
	for _, tr := range conformance.Transports {
		for _, n := range counts {
			t.Run(fmt.Sprintf("%s/n=%d", tr.Name, n), func(t *testing.T) {
				out, err := conformance.RunJob(n, "suite", "rma-,group-,create-,cart-sub,ssend,sendrecv-replace,completion-sets,persistent", tr.Env)
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			})
		}
	}
}
