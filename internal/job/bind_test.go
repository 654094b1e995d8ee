package job

import (
	"testing"

	"github.com/commtune/commtune/internal/config"
)

// TestBindCPU: a rank binds to the local rank's allowed processor only
// when every local rank can have one, and never under "none".
func TestBindCPU(t *testing.T) {
	tests := []struct {
		name             string
		bind             string
		localRank, ranks int
		allowed          []int
		want             int
	}{
		{"one each", config.BindAuto, 1, 2, []int{0, 1}, 1},
		{"allowed set with gaps", config.BindAuto, 1, 2, []int{4, 6, 8}, 6},
		{"more ranks than processors", config.BindAuto, 1, 4, []int{0, 1}, -1},
		{"a launcher bound it already", config.BindAuto, 3, 4, []int{3}, -1},
		{"a rank alone", config.BindAuto, 0, 1, []int{0, 1}, -1},
		{"none", config.BindNone, 0, 2, []int{0, 1}, -1},
		{"local rank out of range", config.BindAuto, 2, 2, []int{0, 1, 2}, -1},
	}
	for _, tc := range tests {
		if got := bindCPU(tc.bind, tc.localRank, tc.ranks, tc.allowed); got != tc.want {
			t.Errorf("%s: processor %d, want %d", tc.name, got, tc.want)
		}
	}
}
