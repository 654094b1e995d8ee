package coll

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/fuzzseed"
)

func TestNamesRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, op := range Operations {
		algs := Algorithms(op)
		if len(algs) == 0 {
			t.Fatalf("%s: no algorithms", op)
		}
		for _, a := range algs {
			name := a.Name()
			if seen[name] {
				t.Fatalf("%s listed twice", name)
			}
			seen[name] = true
			if !strings.HasPrefix(name, string(op)+"/") {
				t.Fatalf("%s: name lacks the operation", name)
			}
			b, err := Parse(op, name)
			if err != nil || b != a {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", name, b, err, a)
			}
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		op   Operation
		spec string
		want string // name, or the start of the error
	}{
		{OpBcast, "binomial:seg=16K", "bcast/binomial/seg=16K"},
		{OpBcast, "binomial", "bcast/binomial/seg=none"},
		{OpBcast, "Binomial/SEG=16KiB", "bcast/binomial/seg=16K"},
		{OpBcast, "knomial", "bcast/knomial/k=4/seg=none"},
		{OpBcast, "knomial:k=3:seg=1M", "bcast/knomial/k=3/seg=1M"},
		{OpBcast, "bcast/chain/seg=none", "bcast/chain/seg=none"},
		{OpAllreduce, "ring", "allreduce/ring"},
		{OpAllreduce, "reduce-bcast", "allreduce/reduce-bcast/binomial/seg=none"},
		{OpAllreduce, "reduce-bcast:binary:seg=64K", "allreduce/reduce-bcast/binary/seg=64K"},
		{OpBarrier, "tree", "barrier/tree/binomial"},
		{OpBarrier, "tree/flat", "barrier/tree/flat"},
		{OpScatter, "binary", "scatter/binary"},
		{OpBcast, "", "bcast algorithm \"\": empty"},
		{OpBcast, "ring", "bcast algorithm \"ring\": no family"},
		{OpBcast, "binomial:seg=3K", "bcast algorithm \"binomial:seg=3K\": seg=3k: want none or a power of two"},
		{OpBcast, "binomial:seg=512", "bcast algorithm \"binomial:seg=512\": seg=512"},
		{OpBcast, "binomial:k=4", "bcast algorithm \"binomial:k=4\": k= applies to knomial"},
		{OpBcast, "knomial:k=1", "bcast algorithm \"knomial:k=1\": k=1"},
		{OpScatter, "binary:seg=4K", "scatter algorithm \"binary:seg=4K\": binary does not take"},
		{OpAllreduce, "ring:binary", "allreduce algorithm \"ring:binary\": unknown part"},
		{"nosuch", "ring", "unknown collective operation"},
	}
	for _, tc := range tests {
		a, err := Parse(tc.op, tc.spec)
		got := a.Name()
		if err != nil {
			got = err.Error()
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("Parse(%s, %q) = %q, want %q", tc.op, tc.spec, got, tc.want)
		}
	}
}

func TestCommutativeRefusal(t *testing.T) {
	l := Layout{Size: 4, Rank: 1, Bytes: 64, Elem: 8}
	for _, a := range Algorithms(OpAllreduce) {
		_, err := a.Build(l, false)
		if refused := errors.Is(err, ErrNotCommutative); refused != a.Commutative() {
			t.Errorf("%s: non-commutative build error %v", a.Name(), err)
		}
	}
}

// FuzzParse checks that Parse never panics and that what it accepts
// round-trips through its name. The seed corpus is testdata/fuzz/FuzzParse
// (see TestFuzzSeeds).
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, op, spec string) {
		a, err := Parse(Operation(op), spec)
		if err != nil {
			return
		}
		b, err := Parse(a.Op, a.Name())
		if err != nil || a != b {
			t.Fatalf("%q parsed as %+v, whose name %q parses as %+v, %v", spec, a, a.Name(), b, err)
		}
	})
}

// TestDecisionTable: every operation has a choice for every size, the
// choice for a non-commutative reduction keeps rank order, and the last
// rule of each operation catches everything.
func TestDecisionTable(t *testing.T) {
	for _, op := range Operations {
		for _, ranks := range []int{1, 2, 3, 4, 17, 1000} {
			for _, bytes := range []int{0, 1, 1 << 10, 1 << 20, 1 << 30} {
				for _, comm := range []bool{true, false} {
					a := Decide(op, ranks, bytes, comm)
					if a.Op != op {
						t.Fatalf("%s: decided %s", op, a.Name())
					}
					if !comm && a.Commutative() {
						t.Fatalf("%s ranks=%d bytes=%d: non-commutative op gets %s", op, ranks, bytes, a.Name())
					}
				}
			}
		}
	}
	if !strings.Contains(DecisionTable(), "allreduce          ranks ≤ any  bytes ≤ 8K    ") {
		t.Fatalf("table:\n%s", DecisionTable())
	}
}

// TestFuzzSeeds keeps testdata/fuzz/FuzzParse in step with the spellings
// Parse knows (go test -run FuzzSeeds -rewrite-seeds).
func TestFuzzSeeds(t *testing.T) {
	var seeds []fuzzseed.Seed
	for _, op := range []string{"bcast", "allreduce", "barrier"} {
		for _, s := range []string{"binomial:seg=16K", "knomial:k=3", "reduce-bcast/binary/seg=64K", "ring", "tree:flat", "seg=", "k=99999999999999999999", "bcast/knomial/k=4/seg=none", "binomial,seg=1.5K"} {
			seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed-%02d", len(seeds)), Values: []any{op, s}})
		}
	}
	fuzzseed.Sync(t, "FuzzParse", seeds)
}
