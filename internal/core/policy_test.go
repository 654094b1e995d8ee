package core

import (
	"testing"

	"github.com/commtune/commtune/internal/driver"
)

func TestPathFor(t *testing.T) {
	p := Policy{Rendezvous: 16 << 10, Large: []LargeMethod{
		{Min: 512 << 10, Method: "cachefree"}, // out of order: the size decides
		{Min: 16<<10 + 1, Method: "copy"},
	}}
	tests := []struct {
		n    int
		want string
	}{
		{0, "eager"}, {16 << 10, "eager"}, {16<<10 + 1, "copy"}, {512<<10 - 1, "copy"},
		{512 << 10, "cachefree"}, {16 << 20, "cachefree"},
	}
	for _, tc := range tests {
		if got := p.PathFor(tc.n); got != tc.want {
			t.Errorf("PathFor(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := (Policy{Rendezvous: 100}).PathFor(101); got != "push" {
		t.Errorf("no Large method: PathFor = %q, want push", got)
	}
}

// TestPickPush: a message that cannot be pulled (a vector send) takes the
// push method the policy names for its size, or the rail's default where
// only a pull is named.
func TestPickPush(t *testing.T) {
	caps := driver.Caps{Transport: "shm", SingleCopy: true, Methods: []string{"copy", "cachefree", "vmsplice"}}
	tests := []struct {
		name  string
		large []LargeMethod
		n     int
		pick  uint8
		push  uint8
	}{
		{"no methods", nil, 1 << 20, 0, 0},
		{"pull only", []LargeMethod{{Min: 1000, Method: MethodPull}}, 1 << 20, pullMethod, 0},
		{"pull above copy", []LargeMethod{{Min: 1000, Method: "copy"}, {Min: 1 << 16, Method: MethodPull}}, 1 << 20, pullMethod, 1},
		{"pull between copy and cachefree", []LargeMethod{{Min: 1000, Method: "vmsplice"}, {Min: 1 << 16, Method: MethodPull}, {Min: 1 << 22, Method: "cachefree"}}, 1 << 20, pullMethod, 3},
		{"cachefree above the pull", []LargeMethod{{Min: 1000, Method: MethodPull}, {Min: 1 << 22, Method: "cachefree"}}, 1 << 23, 2, 2},
		{"below every method", []LargeMethod{{Min: 1 << 16, Method: "cachefree"}}, 1000, 0, 0},
	}
	for _, tc := range tests {
		pm, err := resolveMethods(tc.large, caps, true)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := pm.pick(tc.n); got != tc.pick {
			t.Errorf("%s: pick = %d, want %d", tc.name, got, tc.pick)
		}
		if got := pm.pickPush(tc.n); got != tc.push {
			t.Errorf("%s: pickPush = %d, want %d", tc.name, got, tc.push)
		}
	}
}
