package halo

import "testing"

// TestImpls: twenty implementations with distinct names, the default
// first, each found by its name, each geometry planned by its partners.
func TestImpls(t *testing.T) {
	if len(Impls) != 20 {
		t.Fatalf("%d implementations, want 20", len(Impls))
	}
	if got := Impls[0].Name(); got != "IsendIrecv_aao_pack" {
		t.Errorf("the first implementation is %s", got)
	}
	seen := map[string]bool{}
	oneSided := 0
	for _, m := range Impls {
		name := m.Name()
		if seen[name] {
			t.Errorf("%s listed twice", name)
		}
		seen[name] = true
		if got, ok := LookupImpl(name); !ok || got != m {
			t.Errorf("LookupImpl(%q) = %v, %v", name, got, ok)
		}
		if m.OneSided() {
			oneSided++
		}
	}
	if oneSided != 8 {
		t.Errorf("%d one-sided implementations, want 8", oneSided)
	}
	if _, ok := LookupImpl("Isend_aao_pack"); ok {
		t.Error("an unknown name was found")
	}
	s := Shape{Extents: []int{3, 3}, Width: 1, Components: 1, ElemSize: 8}
	nb := func([]int) int { return 0 }
	for _, tc := range []struct {
		m      Impl
		phases int
	}{{Impls[0], 1}, {Impl{Pairwise, SendRecv, InPlace}, 2}} {
		if p, err := tc.m.Plan(s, nb); err != nil || len(p.Phases) != tc.phases {
			t.Errorf("%s: %d phases, %v; want %d", tc.m.Name(), len(p.Phases), err, tc.phases)
		}
	}
}
