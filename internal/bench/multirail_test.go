package bench

import (
	"slices"
	"testing"
)

// TestMultirailModes: each rail alone, the three split rules, and the
// offloading curves split only when asked for.
func TestMultirailModes(t *testing.T) {
	tests := []struct {
		rails, offload int
		want           []string
	}{
		{2, 0, []string{"rail0", "rail1", "iso", "weighted", "curves"}},
		{2, 256 << 10, []string{"rail0", "rail1", "iso", "weighted", "curves", "split+offload"}},
		{3, 1, []string{"rail0", "rail1", "rail2", "iso", "weighted", "curves", "split+offload"}},
	}
	for _, tc := range tests {
		var got []string
		for _, m := range multirailModes(tc.rails, tc.offload) {
			got = append(got, m.name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%d rails, offload %d: modes %q, want %q", tc.rails, tc.offload, got, tc.want)
		}
	}
}
