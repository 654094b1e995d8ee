package job

import (
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/profile"
)

// TestCollTableFor: a profile's sampled table is used unless the
// configuration keeps the fixed one; a table naming what this commtune
// does not know falls back whole, and each case says why.
func TestCollTableFor(t *testing.T) {
	table := func(op, algo string) *profile.Profile {
		return &profile.Profile{Transports: map[string]*profile.Transport{"shm": {NodeCPUs: 2, Coll: map[string]profile.CollTable{
			"4": {op: {{Bytes: 1 << 20, Ranked: []profile.CollTime{{Algo: algo, MeanUS: 500, Blocks: 5}}}}},
		}}}}
	}
	good := table("allreduce", "allreduce/ring")
	for _, tc := range []struct {
		name   string
		sel    string
		prof   *profile.Profile
		want   string // the table's choice for allreduce on 4 ranks at 1 MiB; "" for no table
		reason string
	}{
		{"sampled", "", good, "allreduce/ring", "sampled table for 4 ranks"},
		{"fixed asked for", config.CollSelectFixed, good, "", "fixed table (COMMTUNE_COLL_SELECT=fixed)"},
		{"no profile", "", nil, "", "fixed table: the profile has no sampled table"},
		{"unknown operation", "", table("allsmash", "allsmash/ring"), "", "names an operation \"allsmash\""},
		{"unknown algorithm", "", table("allreduce", "allreduce/zigzag"), "", "fixed table: the profile's sampled table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab, why := CollTableFor(config.Config{CollSelect: tc.sel}, tc.prof)
			if !strings.Contains(why, tc.reason) {
				t.Errorf("why = %q, want it to say %q", why, tc.reason)
			}
			got := ""
			if a, _, ok := tab.Decide(coll.OpAllreduce, 4, 1<<20, true); ok {
				got = a.Name()
			}
			if got != tc.want {
				t.Errorf("decides %q, want %q", got, tc.want)
			}
		})
	}
}
