package job

import (
	"runtime"
	"testing"
)

// TestShareProcessors checks when a rank's GOMAXPROCS is lowered to its
// share of the node's processors, and that a user's GOMAXPROCS wins.
func TestShareProcessors(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		name               string
		ranks, cpus, start int
		set                bool
		want               int
	}{
		{"not oversubscribed", 2, 2, 2, false, 2},
		{"four ranks on two processors", 4, 2, 2, false, 1},
		{"six ranks on four processors", 6, 4, 4, false, 1},
		{"three ranks on eight processors", 3, 8, 8, false, 8},
		{"thirty-two ranks on sixteen, GOMAXPROCS set", 32, 16, 16, true, 16},
		{"share above what the user has", 4, 16, 2, false, 2},
		{"share of several processors", 8, 64, 64, false, 64},
		{"sixteen ranks on eight", 16, 8, 8, false, 1},
		{"no processors known", 4, 0, 3, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GOMAXPROCS(tc.start)
			shareProcessors(tc.ranks, tc.cpus, tc.set)
			if got := runtime.GOMAXPROCS(0); got != tc.want {
				t.Errorf("GOMAXPROCS %d, want %d", got, tc.want)
			}
		})
	}
}
