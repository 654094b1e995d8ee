package coll

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/tune"
)

var rewriteAlgorithms = flag.Bool("rewrite-algorithms", false, "rewrite testdata/algorithms.txt from Registry")

// TestRegistryRoundTrip: every entry's name parses back to its algorithm,
// names it, and finds it; its attributes describe it; and the registry
// holds what Algorithms lists, each operation's direct and hierarchical
// algorithms after its others, in that order.
func TestRegistryRoundTrip(t *testing.T) {
	r := Registry()
	var want []Algorithm
	for _, op := range Operations {
		want = append(want, Algorithms(op)...)
		if a, ok := DirectAlgorithm(op); ok {
			want = append(want, a)
		}
		if a, ok := HierarchicalAlgorithm(op); ok {
			want = append(want, a)
		}
	}
	entries := r.Entries()
	if len(entries) != len(want) || r.Len() != len(want) {
		t.Fatalf("registry holds %d entries, Algorithms %d", len(entries), len(want))
	}
	for i, e := range entries {
		a := e.Impl
		if a != want[i] {
			t.Errorf("entry %d is %s, Algorithms lists %s", i, e.Name, want[i].Name())
		}
		if a.Name() != e.Name {
			t.Errorf("entry %q holds %s", e.Name, a.Name())
		}
		if b, err := Parse(a.Op, e.Name); err != nil || b != a {
			t.Errorf("Parse(%s, %q) = %+v, %v; want %+v", a.Op, e.Name, b, err, a)
		}
		if got, ok := r.Lookup(e.Name); !ok || got.Impl != a {
			t.Errorf("Lookup(%q) = %+v, %v", e.Name, got.Impl, ok)
		}
		if !reflect.DeepEqual(e, a.Entry()) {
			t.Errorf("%s: registry entry %+v, Entry() %+v", e.Name, e, a.Entry())
		}
		checkAttrs(t, e)
	}
	if Registry() != r {
		t.Error("Registry() builds a new registry on each call")
	}
}

// checkAttrs checks that e's attributes say what its algorithm is.
func checkAttrs(t *testing.T, e tune.Entry[Algorithm]) {
	t.Helper()
	a := e.Impl
	attr := func(key string) string {
		v, ok := e.Attr(key)
		if !ok {
			return "<absent>"
		}
		return v
	}
	want := map[string]string{
		AttrOp:          string(a.Op),
		AttrFamily:      a.Family,
		AttrShape:       "<absent>",
		AttrFanout:      "<absent>",
		AttrSegment:     "<absent>",
		AttrCommutative: "false",
		AttrPull:        "<absent>",
	}
	if a.Pull {
		want[AttrPull] = "true"
	}
	if a.Shape != "" {
		want[AttrShape] = string(a.Shape)
	}
	if a.Shape == Knomial {
		want[AttrFanout] = "4"
	}
	if a.family().segmented {
		want[AttrSegment] = segmentText(a.Segment)
	}
	if a.Commutative() {
		want[AttrCommutative] = "true"
	}
	for key, v := range want {
		if got := attr(key); got != v {
			t.Errorf("%s: %s=%s, want %s", e.Name, key, got, v)
		}
	}
	if present := len(want) - countAbsent(want); len(e.Attrs) > present {
		t.Errorf("%s: unknown attributes in %v", e.Name, e.Attrs)
	}
}

func countAbsent(m map[string]string) int {
	n := 0
	for _, v := range m {
		if v == "<absent>" {
			n++
		}
	}
	return n
}

// TestRegistryNames: stable names, as users force them and saved states
// and benchmark files record them, and the short forms of forcing specs,
// reach the registry's entries; their attributes are as listed.
func TestRegistryNames(t *testing.T) {
	tests := []struct {
		op    Operation
		spec  string
		name  string
		attrs string // key=value, in the entry's order
	}{
		{OpBcast, "bcast/binomial/seg=16K", "bcast/binomial/seg=16K", "op=bcast family=binomial shape=binomial seg=16K commutative=false"},
		{OpBcast, "binomial:seg=16K", "bcast/binomial/seg=16K", "op=bcast family=binomial shape=binomial seg=16K commutative=false"},
		{OpBcast, "knomial", "bcast/knomial/k=4/seg=none", "op=bcast family=knomial shape=knomial k=4 seg=none commutative=false"},
		{OpReduce, "chain,seg=256K", "reduce/chain/seg=256K", "op=reduce family=chain shape=chain seg=256K commutative=false"},
		{OpAllreduce, "allreduce/reduce-bcast/binary/seg=64K", "allreduce/reduce-bcast/binary/seg=64K", "op=allreduce family=reduce-bcast shape=binary seg=64K commutative=false"},
		{OpAllreduce, "reduce-bcast", "allreduce/reduce-bcast/binomial/seg=none", "op=allreduce family=reduce-bcast shape=binomial seg=none commutative=false"},
		{OpAllreduce, "ring", "allreduce/ring", "op=allreduce family=ring commutative=true"},
		{OpAllreduce, "rabenseifner", "allreduce/rabenseifner", "op=allreduce family=rabenseifner commutative=true"},
		{OpAllreduce, "recursive-doubling", "allreduce/recursive-doubling", "op=allreduce family=recursive-doubling commutative=false"},
		{OpBarrier, "barrier/tree/knomial/k=4", "barrier/tree/knomial/k=4", "op=barrier family=tree shape=knomial k=4 commutative=false"},
		{OpBarrier, "tree:knomial", "barrier/tree/knomial/k=4", "op=barrier family=tree shape=knomial k=4 commutative=false"},
		{OpBarrier, "dissemination", "barrier/dissemination", "op=barrier family=dissemination commutative=false"},
		{OpScatter, "binary", "scatter/binary", "op=scatter family=binary shape=binary commutative=false"},
		{OpAllgather, "bruck", "allgather/bruck", "op=allgather family=bruck commutative=false"},
		{OpAlltoall, "pairwise", "alltoall/pairwise", "op=alltoall family=pairwise commutative=false"},
		{OpScatterv, "flat", "scatterv/flat", "op=scatterv family=flat shape=flat commutative=false"},
		{OpAllgatherv, "ring", "allgatherv/ring", "op=allgatherv family=ring commutative=false"},
		{OpAlltoallv, "pairwise", "alltoallv/pairwise", "op=alltoallv family=pairwise commutative=false"},
		{OpReduceScatterBlock, "ring", "reducescatterblock/ring", "op=reducescatterblock family=ring commutative=true"},
		{OpReduceScatter, "recursive-halving", "reducescatter/recursive-halving", "op=reducescatter family=recursive-halving commutative=true"},
		{OpReduceScatter, "recursive-doubling", "reducescatter/recursive-doubling", "op=reducescatter family=recursive-doubling commutative=false"},
		{OpReduceScatter, "reduce-scatterv", "reducescatter/reduce-scatterv/binomial", "op=reducescatter family=reduce-scatterv shape=binomial commutative=false"},
		{OpReduceScatter, "reduce-scatterv:knomial", "reducescatter/reduce-scatterv/knomial/k=4", "op=reducescatter family=reduce-scatterv shape=knomial k=4 commutative=false"},
		{OpScan, "linear", "scan/linear/seg=none", "op=scan family=linear seg=none commutative=false"},
		{OpScan, "recursive-doubling", "scan/recursive-doubling", "op=scan family=recursive-doubling commutative=false"},
		{OpExscan, "exscan/linear/seg=16K", "exscan/linear/seg=16K", "op=exscan family=linear seg=16K commutative=false"},
	}
	for _, tt := range tests {
		a, err := Parse(tt.op, tt.spec)
		if err != nil || a.Name() != tt.name {
			t.Errorf("Parse(%s, %q) = %s, %v; want %s", tt.op, tt.spec, a.Name(), err, tt.name)
			continue
		}
		e, ok := Registry().Lookup(tt.name)
		if !ok || e.Impl != a {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v", tt.name, e.Impl, ok, a)
			continue
		}
		if got := attrText(e); got != tt.attrs {
			t.Errorf("%s: attributes %q, want %q", tt.name, got, tt.attrs)
		}
	}
	// Forcing reaches beyond the registry: such algorithms have entries
	// of their own, which Lookup does not find.
	for _, tt := range []struct {
		op    Operation
		spec  string
		attrs string
	}{
		{OpBcast, "knomial:k=3", "op=bcast family=knomial shape=knomial k=3 seg=none commutative=false"},
		{OpReduce, "binomial:seg=1M", "op=reduce family=binomial shape=binomial seg=1M commutative=false"},
	} {
		a, err := Parse(tt.op, tt.spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := Registry().Lookup(a.Name()); ok {
			t.Errorf("%s is registered; Algorithms does not list it", a.Name())
		}
		if got := attrText(a.Entry()); got != tt.attrs {
			t.Errorf("%s: attributes %q, want %q", a.Name(), got, tt.attrs)
		}
	}
}

// TestRegistryQueries runs the queries a selector reasoning on attributes
// makes (seed 001 §3, seed 003 §III).
func TestRegistryQueries(t *testing.T) {
	r := Registry()
	of := func(op Operation) func(tune.Entry[Algorithm]) bool {
		return func(e tune.Entry[Algorithm]) bool { return e.Impl.Op == op }
	}
	count := func(keep func(tune.Entry[Algorithm]) bool) int { return len(r.Where(keep)) }
	tests := []struct {
		query string
		got   any
		want  any
	}{
		{"bcast algorithms", count(of(OpBcast)), len(shapes)*len(Segments) + 2 + 2}, // two pulled, direct and hierarchical
		{"pulled", names(r.With(AttrPull, "true"))[:4], []string{"bcast/binomial/seg=none/pull", "bcast/knomial/k=4/seg=none/pull",
			"reduce/binomial/seg=none/pull", "reduce/knomial/k=4/seg=none/pull"}},
		{"bcast shapes", r.Values(AttrShape, of(OpBcast)), []string{"flat", "chain", "binary", "binomial", "knomial"}},
		{"allreduce families", r.Values(AttrFamily, of(OpAllreduce)), []string{ReduceBcast, RecursiveDoubling, Ring, Rabenseifner, Direct, Hierarchical}},
		{"hierarchical", names(r.With(AttrFamily, Hierarchical)), []string{"barrier/hierarchical", "bcast/hierarchical", "reduce/hierarchical", "allreduce/hierarchical"}},
		{"direct", names(r.With(AttrFamily, Direct)), []string{"barrier/direct", "bcast/direct", "reduce/direct", "allreduce/direct",
			"scatter/direct", "gather/direct", "allgather/direct", "alltoall/direct"}},
		{"segment sizes", r.Values(AttrSegment, nil), []string{"none", "1K", "4K", "16K", "64K", "256K"}},
		{"fan-outs", r.Values(AttrFanout, nil), []string{"4"}},
		{"commutative only", names(r.With(AttrCommutative, "true")), []string{"reduce/hierarchical", "allreduce/ring", "allreduce/ring/pull", "allreduce/rabenseifner", "allreduce/rabenseifner/pull",
			"allreduce/hierarchical", "reducescatterblock/recursive-halving", "reducescatterblock/ring", "reducescatter/recursive-halving", "reducescatter/ring"}},
		{"scan families", r.Values(AttrFamily, of(OpScan)), []string{RecursiveDoubling, Linear}},
		{"exscan algorithms", count(of(OpExscan)), 1 + len(Segments)},
		{"reducescatter trees", r.Values(AttrShape, of(OpReduceScatter)), []string{"flat", "chain", "binary", "binomial", "knomial"}},
		{"barrier trees", len(r.Where(func(e tune.Entry[Algorithm]) bool {
			return e.Impl.Op == OpBarrier && e.Impl.Family == Tree
		})), len(shapes)},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("%s = %v, want %v", tt.query, tt.got, tt.want)
		}
	}
}

// TestRegistryGolden keeps testdata/algorithms.txt, every registered name
// and its attributes, in step with Registry: names are stable, so a diff
// here is a renamed algorithm (go test -run RegistryGolden
// -rewrite-algorithms after adding one).
func TestRegistryGolden(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Every algorithm coll.Registry holds: name, then attributes. Generated by TestRegistryGolden.\n")
	for _, e := range Registry().Entries() {
		b.WriteString(e.Name + "\t" + attrText(e) + "\n")
	}
	path := filepath.Join("testdata", "algorithms.txt")
	if *rewriteAlgorithms {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(old) != b.String() {
		t.Errorf("%s is stale or an algorithm changed name: compare, then go test -run %s -rewrite-algorithms", path, t.Name())
	}
}

// TestBuildUnknown: an algorithm no family has, or on a tree its family
// does not run on, is an error, not a panic.
func TestBuildUnknown(t *testing.T) {
	l := Layout{Size: 4, Rank: 1, Bytes: 64, Elem: 8}
	for _, a := range []Algorithm{
		{},
		{Op: OpBcast, Family: Ring},
		{Op: "nosuch", Family: Ring},
		{Op: OpBcast, Family: "binomial", Shape: Chain},
		{Op: OpBcast, Family: "binomial"},
		{Op: OpAllreduce, Family: ReduceBcast, Shape: "star"},
	} {
		if _, err := a.Build(l, true); err == nil || !strings.Contains(err.Error(), "no algorithm") {
			t.Errorf("%+v: Build error %v", a, err)
		}
	}
}

// TestFamilyTable: every operation has families, each family's schedule
// builds, and a family named after a tree runs on that tree alone.
func TestFamilyTable(t *testing.T) {
	for _, op := range Operations {
		if len(opFamilies[op]) == 0 {
			t.Errorf("%s: no family", op)
		}
	}
	for _, f := range familyTable {
		if f.build == nil {
			t.Errorf("%s/%s: no build", f.op, f.name)
		}
		if isTree := lookupShape(f.name); isTree && !f.namedByShape() {
			t.Errorf("%s/%s: named after a tree but runs on %v", f.op, f.name, f.shapes)
		}
	}
}

func lookupShape(name string) bool {
	for _, s := range shapes {
		if string(s) == name {
			return true
		}
	}
	return false
}

func attrText(e tune.Entry[Algorithm]) string {
	var parts []string
	for _, a := range e.Attrs {
		parts = append(parts, a.Key+"="+a.Value)
	}
	return strings.Join(parts, " ")
}

func names(es []tune.Entry[Algorithm]) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name)
	}
	return out
}
