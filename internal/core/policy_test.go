package core

import "testing"

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
