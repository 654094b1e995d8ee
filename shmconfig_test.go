package commtune

import (
	"fmt"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/topo"
)

// TestShmPolicyRule checks seed 004 §4.1's rule as applied without a
// profile: cma when the ranks share no cache (and CMA works), copy when
// they share one or the topology cannot tell, cachefree from DMA_min.
func TestShmPolicyRule(t *testing.T) {
	methods := []string{"copy", "cachefree", "vmsplice"}
	tests := []struct {
		name   string
		method string
		peer   shmPeer
		want   string // Large, as "method from size"
	}{
		{"shared cache", "auto", shmPeer{canPull: true, methods: methods, sharing: topo.SharingCache, dmaMin: 8 << 20},
			"copy from 16385, cachefree from 8388608"},
		{"no shared cache", "auto", shmPeer{canPull: true, methods: methods, sharing: topo.SharingNone, dmaMin: 2 << 20},
			"pull from 16385, cachefree from 2097152"},
		{"sharing unknown (this VM: L3 a total)", "auto", shmPeer{canPull: true, methods: methods, sharing: topo.SharingUnknown, dmaMin: 512 << 10},
			"copy from 16385, cachefree from 524288"},
		{"no cache known at all", "auto", shmPeer{canPull: true, methods: methods, sharing: topo.SharingUnknown},
			"copy from 16385"},
		{"no shared cache, CMA forbidden", "auto", shmPeer{methods: methods, sharing: topo.SharingNone, dmaMin: 2 << 20},
			"copy from 16385, cachefree from 2097152"},
		{"DMA_min below the eager limit", "auto", shmPeer{canPull: true, methods: methods, sharing: topo.SharingCache, dmaMin: 4 << 10},
			"copy from 16385, cachefree from 16385"},
		{"cma forced", "cma", shmPeer{canPull: true, methods: methods, sharing: topo.SharingCache, dmaMin: 8 << 20},
			"pull from 16385"},
		{"copy forced", "copy", shmPeer{canPull: true, methods: methods, sharing: topo.SharingNone, dmaMin: 8 << 20},
			"copy from 16385"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Shm: ShmConfig{Method: tc.method}}
			p := cfg.shmPolicy(tc.peer, nil)
			var got []string
			for _, l := range p.Large {
				got = append(got, fmt.Sprintf("%s from %d", l.Method, l.Min))
			}
			if g := strings.Join(got, ", "); g != tc.want {
				t.Fatalf("Large = %s, want %s", g, tc.want)
			}
		})
	}
}
