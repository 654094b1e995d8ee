package control

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/core"
)

// TestPath names the path of sizes on both sides of each threshold.
func TestPath(t *testing.T) {
	shm := core.Policy{Rendezvous: 16 << 10, Iovec: 256, Large: []core.LargeMethod{{Min: 16<<10 + 1, Method: "copy"}, {Min: 8 << 20, Method: "cachefree"}}}
	tests := []struct {
		p         core.Policy
		n         int64
		transport string
		want      string
	}{
		{shm, 100, "shm", "eager-copy"},
		{shm, 256, "shm", "eager-iovec"},
		{shm, 16 << 10, "shm", "eager-iovec"},
		{shm, 16<<10 + 1, "shm", "rendezvous/copy"},
		{shm, 8 << 20, "shm", "rendezvous/cachefree"},
		{core.Policy{Rendezvous: 0, Large: []core.LargeMethod{{Method: core.MethodPull}}}, 1, "shm", "rendezvous/cma"},
		{core.Policy{Rendezvous: 0}, 1, "shm", "rendezvous/copy"}, // the rail's own method
		{core.Policy{Rendezvous: 64 << 10, Iovec: 2048}, 1 << 20, "tcp", "rendezvous/push"},
	}
	for _, tc := range tests {
		if got := Path(tc.p, tc.n, tc.transport); got != tc.want {
			t.Errorf("Path(%+v, %d, %s) = %s, want %s", tc.p, tc.n, tc.transport, got, tc.want)
		}
	}
}

// TestRanges: one range per path, boundaries at the thresholds, an
// iovec threshold above the eager limit shows no iovec range.
func TestRanges(t *testing.T) {
	tests := []struct {
		name      string
		p         core.Policy
		transport string
		want      string
	}{
		{"shm tiers", core.Policy{Rendezvous: 16 << 10, Iovec: 256, Large: []core.LargeMethod{{Min: 16<<10 + 1, Method: "copy"}, {Min: 8 << 20, Method: "cachefree"}}}, "shm",
			"0-256 eager-copy, 256-16385 eager-iovec, 16385-8388608 rendezvous/copy, 8388608- rendezvous/cachefree"},
		{"tcp defaults", core.Policy{Rendezvous: 64 << 10, Iovec: 2048}, "tcp",
			"0-2048 eager-copy, 2048-65537 eager-iovec, 65537- rendezvous/push"},
		{"iovec from the first byte", core.Policy{Rendezvous: 1000, Iovec: 1}, "tcp",
			"0-1001 eager-iovec, 1001- rendezvous/push"},
		{"iovec never", core.Policy{Rendezvous: 1000, Iovec: math.MaxInt, Large: []core.LargeMethod{{Min: 1001, Method: core.MethodPull}}}, "shm",
			"0-1001 eager-copy, 1001- rendezvous/cma"},
		{"large method below the eager limit", core.Policy{Rendezvous: 4096, Iovec: 1, Large: []core.LargeMethod{{Min: 100, Method: "vmsplice"}, {Min: 1 << 20, Method: "copy"}}}, "shm",
			"0-4097 eager-iovec, 4097-1048576 rendezvous/vmsplice, 1048576- rendezvous/copy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range Ranges(tc.p, tc.transport) {
				to := ""
				if r.To != 0 {
					to = strconv.FormatInt(r.To, 10)
				}
				got = append(got, fmt.Sprintf("%d-%s %s", r.From, to, r.Path))
			}
			if g := strings.Join(got, ", "); g != tc.want {
				t.Errorf("Ranges = %s\nwant      %s", g, tc.want)
			}
		})
	}
}
