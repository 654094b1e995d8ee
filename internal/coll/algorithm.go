package coll

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/commtune/commtune/internal/units"
)

// Operation names a collective operation.
type Operation string

// The operations, by their MPI names in lower case.
const (
	OpBarrier    Operation = "barrier"
	OpBcast      Operation = "bcast"
	OpReduce     Operation = "reduce"
	OpAllreduce  Operation = "allreduce"
	OpScatter    Operation = "scatter"
	OpGather     Operation = "gather"
	OpAllgather  Operation = "allgather"
	OpAlltoall   Operation = "alltoall"
	OpScatterv   Operation = "scatterv"
	OpGatherv    Operation = "gatherv"
	OpAllgatherv Operation = "allgatherv"
	OpAlltoallv  Operation = "alltoallv"
)

// Operations lists every operation.
var Operations = []Operation{OpBarrier, OpBcast, OpReduce, OpAllreduce, OpScatter, OpGather, OpAllgather, OpAlltoall, OpScatterv, OpGatherv, OpAllgatherv, OpAlltoallv}

// Families of algorithms that are not a tree shape.
const (
	ReduceBcast       = "reduce-bcast"       // allreduce: reduce to rank 0, then bcast, on a tree
	RecursiveDoubling = "recursive-doubling" // allreduce, allgather
	Ring              = "ring"               // allreduce, allgather, allgatherv
	Rabenseifner      = "rabenseifner"       // allreduce
	Bruck             = "bruck"              // allgather, alltoall
	Pairwise          = "pairwise"           // alltoall, alltoallv
	Dissemination     = "dissemination"      // barrier
	Tree              = "tree"               // barrier: up and down a tree
)

// Algorithm is one member of a family, described by its attributes (seed
// 001 §3: a selector reasons on shape, fan-out and segment size).
type Algorithm struct {
	Op     Operation
	Family string // a tree Shape, or one of the families above
	// Shape is the tree a ReduceBcast or Tree algorithm runs on (for tree
	// families it equals Family).
	Shape   Shape
	Fanout  int // k of a k-nomial tree; 0 otherwise
	Segment int // pipeline segment in bytes; 0 sends whole messages
}

// DefaultFanout is the k of a k-nomial tree when none is given.
const DefaultFanout = 4

// MinSegment is the smallest pipeline segment (seed 001 §3.2 measures
// from 1 KiB up).
const MinSegment = 1 << 10

// Segments are the segment sizes "all" benchmarks; any power of two from
// MinSegment up can be forced.
var Segments = []int{0, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10}

var shapes = []Shape{Flat, Chain, Binary, Binomial, Knomial}

// families lists each operation's families; segmented says which take a
// segment size.
var families = map[Operation][]string{
	OpBarrier:    {Dissemination, Tree},
	OpBcast:      treeFamilies(),
	OpReduce:     treeFamilies(),
	OpAllreduce:  {ReduceBcast, RecursiveDoubling, Ring, Rabenseifner},
	OpScatter:    treeFamilies(),
	OpGather:     treeFamilies(),
	OpAllgather:  {Ring, RecursiveDoubling, Bruck},
	OpAlltoall:   {Pairwise, Bruck},
	OpScatterv:   {string(Flat)},
	OpGatherv:    {string(Flat)},
	OpAllgatherv: {Ring},
	OpAlltoallv:  {Pairwise},
}

func treeFamilies() []string {
	var out []string
	for _, s := range shapes {
		out = append(out, string(s))
	}
	return out
}

func isShape(f string) bool {
	for _, s := range shapes {
		if string(s) == f {
			return true
		}
	}
	return false
}

// segmented reports whether a's family pipelines in segments.
func (a Algorithm) segmented() bool {
	switch a.Op {
	case OpBcast, OpReduce:
		return true
	case OpAllreduce:
		return a.Family == ReduceBcast
	}
	return false
}

// onTree reports whether a runs on a tree of a.Shape.
func (a Algorithm) onTree() bool {
	return isShape(a.Family) || a.Family == ReduceBcast || a.Family == Tree
}

// Commutative reports whether a needs a commutative reduction.
func (a Algorithm) Commutative() bool {
	return a.Op == OpAllreduce && (a.Family == Ring || a.Family == Rabenseifner)
}

// Name is a's stable name: the operation, the family, then the
// attributes, e.g. "bcast/binomial/seg=16K", "bcast/knomial/k=4/seg=none",
// "allreduce/reduce-bcast/binary/seg=64K", "allreduce/ring".
func (a Algorithm) Name() string {
	parts := []string{string(a.Op), a.Family}
	if a.Family == ReduceBcast || a.Family == Tree {
		parts = append(parts, string(a.Shape))
	}
	if a.Shape == Knomial {
		parts = append(parts, "k="+strconv.Itoa(a.Fanout))
	}
	if a.segmented() {
		seg := "none"
		if a.Segment > 0 {
			seg = units.FormatSize(int64(a.Segment))
		}
		parts = append(parts, "seg="+seg)
	}
	return strings.Join(parts, "/")
}

func (a Algorithm) String() string { return a.Name() }

// Algorithms lists op's algorithms as a benchmark of "all" runs them:
// every family, every tree shape (k-nomial with DefaultFanout), and for
// pipelined families every size of Segments.
func Algorithms(op Operation) []Algorithm {
	var out []Algorithm
	for _, f := range families[op] {
		base := Algorithm{Op: op, Family: f}
		var trees []Shape
		switch {
		case isShape(f):
			trees = []Shape{Shape(f)}
		case f == ReduceBcast || f == Tree:
			trees = shapes
		default:
			out = append(out, base)
			continue
		}
		for _, sh := range trees {
			a := base
			a.Shape = sh
			if sh == Knomial {
				a.Fanout = DefaultFanout
			}
			if !a.segmented() {
				out = append(out, a)
				continue
			}
			for _, seg := range Segments {
				a.Segment = seg
				out = append(out, a)
			}
		}
	}
	return out
}

// Parse reads an algorithm of op from a name or a forcing spec: the
// operation prefix is optional and "/", ":" or "," separate the parts, so
// "bcast/binomial/seg=16K", "binomial:seg=16K" and "knomial:k=3" all
// work. Attributes left out take their defaults: no segmentation, a
// binomial tree under reduce-bcast and tree, k = DefaultFanout.
func Parse(op Operation, spec string) (Algorithm, error) {
	fields := strings.FieldsFunc(strings.ToLower(strings.TrimSpace(spec)), func(r rune) bool {
		return r == '/' || r == ':' || r == ','
	})
	if len(fields) > 0 && fields[0] == string(op) {
		fields = fields[1:]
	}
	bad := func(format string, args ...any) (Algorithm, error) {
		return Algorithm{}, fmt.Errorf("%s algorithm %q: %s (known: %s)", op, spec, fmt.Sprintf(format, args...), strings.Join(families[op], ", "))
	}
	if _, ok := families[op]; !ok {
		return Algorithm{}, fmt.Errorf("unknown collective operation %q", op)
	}
	if len(fields) == 0 {
		return bad("empty")
	}
	a := Algorithm{Op: op, Family: fields[0]}
	known := false
	for _, f := range families[op] {
		known = known || f == a.Family
	}
	if !known {
		return bad("no family %q", a.Family)
	}
	if isShape(a.Family) {
		a.Shape = Shape(a.Family)
	} else if a.onTree() {
		a.Shape = Binomial
	}
	fanoutSet := false
	for _, f := range fields[1:] {
		key, val, hasVal := strings.Cut(f, "=")
		switch {
		case !hasVal && isShape(key) && (a.Family == ReduceBcast || a.Family == Tree):
			a.Shape = Shape(key)
		case key == "k" && hasVal:
			k, err := strconv.Atoi(val)
			if err != nil || k < 2 || k > 64 {
				return bad("k=%s: want a whole number from 2 to 64", val)
			}
			a.Fanout, fanoutSet = k, true
		case key == "seg" && hasVal:
			if !a.segmented() {
				return bad("%s does not take a segment size", a.Family)
			}
			if val == "none" || val == "0" {
				a.Segment = 0
				continue
			}
			n, err := units.ParseSize(val)
			if err != nil || n < MinSegment || n&(n-1) != 0 || n > 1<<30 {
				return bad("seg=%s: want none or a power of two from 1K to 1G", val)
			}
			a.Segment = int(n)
		default:
			return bad("unknown part %q", f)
		}
	}
	switch {
	case a.Shape == Knomial && !fanoutSet:
		a.Fanout = DefaultFanout
	case a.Shape != Knomial && fanoutSet:
		return bad("k= applies to knomial trees only")
	}
	return a, nil
}

// Build returns rank l.Rank's schedule of a for the call l describes. A
// reduction algorithm that reorders contributions refuses a
// non-commutative operation with ErrNotCommutative.
func (a Algorithm) Build(l Layout, commutative bool) (Schedule, error) {
	if !commutative && a.Commutative() {
		return Schedule{}, fmt.Errorf("%s: %w", a.Name(), ErrNotCommutative)
	}
	switch a.Op {
	case OpBarrier:
		if a.Family == Dissemination {
			return barrierDissemination(l), nil
		}
		return barrierTree(l, a.Shape, a.Fanout), nil
	case OpBcast:
		return bcastSchedule(l, a.Shape, a.Fanout, a.Segment), nil
	case OpReduce:
		return reduceSchedule(l, a.Shape, a.Fanout, a.Segment, commutative), nil
	case OpScatter:
		return scatterSchedule(l, a.Shape, a.Fanout), nil
	case OpGather:
		return gatherSchedule(l, a.Shape, a.Fanout), nil
	case OpAllreduce:
		switch a.Family {
		case ReduceBcast:
			return allreduceReduceBcast(l, a.Shape, a.Fanout, a.Segment), nil
		case RecursiveDoubling:
			return allreduceDoubling(l), nil
		case Ring:
			return allreduceRing(l), nil
		case Rabenseifner:
			return allreduceRabenseifner(l), nil
		}
	case OpAllgather:
		switch a.Family {
		case Ring:
			return allgatherRing(l), nil
		case RecursiveDoubling:
			return allgatherDoubling(l), nil
		case Bruck:
			return allgatherBruck(l), nil
		}
	case OpAlltoall:
		switch a.Family {
		case Pairwise:
			return alltoallPairwise(l), nil
		case Bruck:
			return alltoallBruck(l), nil
		}
	case OpScatterv:
		return scattervFlat(l), nil
	case OpGatherv:
		return gathervFlat(l), nil
	case OpAllgatherv:
		return allgathervRing(l), nil
	case OpAlltoallv:
		return alltoallvPairwise(l), nil
	}
	return Schedule{}, fmt.Errorf("coll: no algorithm %s", a.Name())
}
