package proctest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/testenv"
)

// TestHaloProcesses runs the halo check on processes over TCP and shared
// memory, with the default thresholds and with rendezvous from 1 KiB, so
// that boxes travel both eagerly and by rendezvous (pulled over shm).
func TestHaloProcesses(t *testing.T) {
	for _, tr := range conformance.Transports {
		for _, rndv := range []string{"", "1K"} {
			for _, n := range testenv.Pick([]int{4, 6}, []int{4}) {
				name := fmt.Sprintf("%s/n=%d/rndv=%s", tr.Name, n, map[string]string{"": "default", "1K": "1K"}[rndv])
				t.Run(name, func(t *testing.T) {
					env := []string{tr.Env, "COMMTUNE_HALO_STATE=off"}
					if rndv != "" {
						env = append(env, "COMMTUNE_RNDV_THRESHOLD="+rndv)
					}
					out, err := conformance.RunJob(n, "halo", "", env...)
					if err != nil {
						t.Fatalf("%v\n%s", err, out)
					}
					if !strings.Contains(out, "halo exchanges checked") {
						t.Fatalf("no rank reported its checks:\n%s", out)
					}
					// Get reads in place where a rail can and is served by
					// puts elsewhere. Over shm it can where CMA is allowed;
					// containers, Yama or seccomp may forbid it, and a job
					// does not say which, so over shm no read is reported,
					// not failed.
					reads := !strings.Contains(out, " 0 one-sided reads")
					switch {
					case tr.Name == "tcp" && reads:
						t.Fatalf("over tcp, one-sided reads happened:\n%s", out)
					case tr.Name == "shm" && !reads:
						t.Log("over shm, no rank read another's memory (CMA unavailable here): Get was served by puts")
					}
					if strings.Contains(out, " 0 one-sided puts") {
						t.Fatalf("a rank made no one-sided put:\n%s", out)
					}
					t.Log(strings.SplitN(out, "\n", 2)[0])
				})
			}
		}
	}
}
