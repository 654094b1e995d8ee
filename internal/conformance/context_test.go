package conformance

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/commtune/commtune"
)

// contextWays are the transports and shm methods the context checks run
// over; shm with nothing eager sends even barrier tokens by rendezvous.
var contextWays = []struct {
	name string
	env  []string
}{
	{"tcp", []string{"COMMTUNE_TRANSPORTS=tcp"}},
	{"shm auto", []string{"COMMTUNE_TRANSPORTS=shm,tcp"}},
	{"shm copy", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_METHOD=copy"}},
	{"shm cma", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_METHOD=cma"}},
	{"shm cma, none eager", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_METHOD=cma", "COMMTUNE_SHM_EAGER=0"}},
	{"shm vmsplice", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_METHOD=vmsplice"}},
	{"shm cachefree", []string{"COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_METHOD=cachefree"}},
}

// TestContextTable runs ContextChecks on two ranks over goroutines and
// every transport and shm method, and prints what rank 0 saw as one table:
// contexts and Cancel must behave alike everywhere.
func TestContextTable(t *testing.T) {
	rows := map[string]map[string]string{}
	var order []string
	record := func(way string, lines []string) {
		order = append(order, way)
		rows[way] = map[string]string{}
		for _, l := range lines {
			if check, result, ok := strings.Cut(l, ": "); ok {
				rows[way][check] = result
			}
		}
	}
	var local []string
	err := commtune.Local(2, func(c *commtune.Comm) error {
		lines, err := ContextChecks(context.Background(), c)
		if c.Rank() == 0 {
			local = lines
		}
		return err
	})
	if err != nil {
		t.Fatalf("goroutine ranks: %v", err)
	}
	record("goroutines", local)
	line := regexp.MustCompile(`rank 0: (\S+: .*)`)
	for _, w := range contextWays {
		out, err := runJob(t, 2, "ctxtable", "", w.env...)
		if err != nil {
			t.Errorf("%s: %v\n%s", w.name, err, out)
			continue
		}
		var lines []string
		for _, m := range line.FindAllStringSubmatch(out, -1) {
			lines = append(lines, m[1])
		}
		record(w.name, lines)
	}
	checks := []string{"send-deadline", "cancel-unmatched", "bcast-missing", "barrier-missing"}
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s", "")
	for _, c := range checks {
		fmt.Fprintf(&b, " | %-34s", c)
	}
	for _, way := range order {
		fmt.Fprintf(&b, "\n%-22s", way)
		for _, c := range checks {
			fmt.Fprintf(&b, " | %-34s", rows[way][c])
		}
	}
	t.Logf("deadlines: send %v, collectives %v\n%s", ctxSendDeadline, ctxCollDeadline, b.String())
}
