package coll

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/commtune/commtune/internal/units"
)

// Operation names a collective operation.
type Operation string

// The operations, by their MPI names in lower case (without underscores).
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
	// MPI_Reduce_scatter_block, MPI_Reduce_scatter, MPI_Scan, MPI_Exscan.
	OpReduceScatterBlock Operation = "reducescatterblock"
	OpReduceScatter      Operation = "reducescatter"
	OpScan               Operation = "scan"
	OpExscan             Operation = "exscan"
)

// Operations lists every operation.
var Operations = []Operation{OpBarrier, OpBcast, OpReduce, OpAllreduce, OpScatter, OpGather, OpAllgather, OpAlltoall, OpScatterv, OpGatherv, OpAllgatherv, OpAlltoallv,
	OpReduceScatterBlock, OpReduceScatter, OpScan, OpExscan}

// Reduces reports whether op combines data with a reduction operation.
func (op Operation) Reduces() bool {
	switch op {
	case OpReduce, OpAllreduce, OpReduceScatterBlock, OpReduceScatter, OpScan, OpExscan:
		return true
	}
	return false
}

// Families of algorithms that are not a tree shape.
const (
	ReduceBcast       = "reduce-bcast"       // allreduce: reduce to rank 0, then bcast, on a tree
	RecursiveDoubling = "recursive-doubling" // allreduce, allgather, reduce-scatter, scan, exscan
	Ring              = "ring"               // allreduce, allgather, allgatherv, reduce-scatter
	Rabenseifner      = "rabenseifner"       // allreduce
	Bruck             = "bruck"              // allgather, alltoall
	Pairwise          = "pairwise"           // alltoall, alltoallv
	Dissemination     = "dissemination"      // barrier
	Tree              = "tree"               // barrier: up and down a tree
	RecursiveHalving  = "recursive-halving"  // reduce-scatter
	ReduceScatterv    = "reduce-scatterv"    // reduce-scatter: reduce to rank 0 on a tree, then scatter the blocks
	Linear            = "linear"             // scan, exscan: a chain from rank 0 up; allgather: every block straight to every rank
)

// Algorithm is one member of a family, described by its attributes (seed
// 001 §3: a selector reasons on shape, fan-out and segment size).
type Algorithm struct {
	Op     Operation
	Family string // a tree Shape, or one of the families above
	// Shape is the tree a ReduceBcast, ReduceScatterv or Tree algorithm
	// runs on (for tree families it equals Family).
	Shape   Shape
	Fanout  int // k of a k-nomial tree; 0 otherwise
	Segment int // pipeline segment in bytes; 0 sends whole messages
	// Pull has each message read in place by its receiver where the
	// ranks can read each other's memory (shared memory with CMA): one
	// copy per byte instead of two through a ring (seed 004 §4.2); a
	// message to a peer that cannot is sent as usual.
	Pull bool
}

// PartPull is the part of a name that says an algorithm's messages are
// pulled (Algorithm.Pull).
const PartPull = "pull"

// DefaultFanout is the k of a k-nomial tree when none is given.
const DefaultFanout = 4

// MinSegment is the smallest pipeline segment (seed 001 §3.2 measures
// from 1 KiB up).
const MinSegment = 1 << 10

// Segments are the segment sizes "all" benchmarks; any power of two from
// MinSegment up can be forced.
var Segments = []int{0, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10}

// family returns a's entry in familyTable, or nil for an algorithm no
// family has.
func (a Algorithm) family() *family { return lookupFamily(a.Op, a.Family) }

// Pulls reports whether a's family gains from having its messages pulled
// (Algorithms lists its pulled form): the decision table pulls those
// alone.
func (a Algorithm) Pulls() bool {
	f := a.family()
	return f != nil && f.pulled
}

// Commutative reports whether a needs a commutative reduction.
func (a Algorithm) Commutative() bool {
	f := a.family()
	return f != nil && f.commutative
}

// Name is a's stable name: the operation, the family, then the
// attributes, e.g. "bcast/binomial/seg=16K", "bcast/knomial/k=4/seg=none",
// "allreduce/reduce-bcast/binary/seg=64K", "allreduce/ring".
func (a Algorithm) Name() string {
	f := a.family()
	parts := []string{string(a.Op), a.Family}
	if f != nil && len(f.shapes) > 0 && !f.namedByShape() {
		parts = append(parts, string(a.Shape))
	}
	if a.Shape == Knomial {
		parts = append(parts, "k="+strconv.Itoa(a.Fanout))
	}
	if f != nil && f.segmented {
		parts = append(parts, "seg="+segmentText(a.Segment))
	}
	if a.Pull {
		parts = append(parts, PartPull)
	}
	return strings.Join(parts, "/")
}

// segmentText spells a segment size as names do: "none" for whole
// messages, else e.g. "16K".
func segmentText(seg int) string {
	if seg <= 0 {
		return "none"
	}
	return units.FormatSize(int64(seg))
}

func (a Algorithm) String() string { return a.Name() }

// Algorithms lists op's algorithms as a benchmark of "all" runs them:
// every family that passes messages, every tree shape (k-nomial with
// DefaultFanout), for pipelined families every size of Segments, and for
// the families that gain most from single copy their whole-message
// pulled form (any algorithm can be forced to pull).
// Direct algorithms, which only ranks sharing memory can run, are not
// among them (DirectAlgorithm).
func Algorithms(op Operation) []Algorithm {
	var out []Algorithm
	for _, f := range opFamilies[op] {
		if f.direct || f.composite {
			continue
		}
		base := Algorithm{Op: op, Family: f.name}
		trees := f.shapes
		if len(trees) == 0 {
			trees = []Shape{""}
		}
		for _, sh := range trees {
			a := base
			a.Shape = sh
			if sh == Knomial {
				a.Fanout = DefaultFanout
			}
			if !f.segmented {
				out = append(out, a)
			} else {
				for _, seg := range Segments {
					a.Segment = seg
					out = append(out, a)
				}
			}
			if f.pulled {
				a.Segment, a.Pull = 0, true
				out = append(out, a)
			}
		}
	}
	return out
}

// familyNames lists op's families, for error messages.
func familyNames(op Operation) []string {
	var out []string
	for _, f := range opFamilies[op] {
		out = append(out, f.name)
	}
	return out
}

// Parse reads an algorithm of op from a name or a forcing spec: the
// operation prefix is optional and "/", ":" or "," separate the parts, so
// "bcast/binomial/seg=16K", "binomial:seg=16K" and "knomial:k=3" all
// work. Attributes left out take their defaults: no segmentation, a
// binomial tree under reduce-bcast and tree (a family's first tree if it
// has no binomial one), k = DefaultFanout.
func Parse(op Operation, spec string) (Algorithm, error) {
	fields := strings.FieldsFunc(strings.ToLower(strings.TrimSpace(spec)), func(r rune) bool {
		return r == '/' || r == ':' || r == ','
	})
	if len(fields) > 0 && fields[0] == string(op) {
		fields = fields[1:]
	}
	bad := func(format string, args ...any) (Algorithm, error) {
		return Algorithm{}, fmt.Errorf("%s algorithm %q: %s (known: %s)", op, spec, fmt.Sprintf(format, args...), strings.Join(familyNames(op), ", "))
	}
	if len(opFamilies[op]) == 0 {
		return Algorithm{}, fmt.Errorf("unknown collective operation %q", op)
	}
	if len(fields) == 0 {
		return bad("empty")
	}
	a := Algorithm{Op: op, Family: fields[0]}
	f := lookupFamily(op, a.Family)
	if f == nil {
		return bad("no family %q", a.Family)
	}
	switch {
	case len(f.shapes) == 0:
	case f.namedByShape() || !f.takes(Binomial):
		a.Shape = f.shapes[0]
	default:
		a.Shape = Binomial
	}
	fanoutSet := false
	for _, part := range fields[1:] {
		key, val, hasVal := strings.Cut(part, "=")
		switch {
		case !hasVal && !f.namedByShape() && f.takes(Shape(key)):
			a.Shape = Shape(key)
		case key == "k" && hasVal:
			k, err := strconv.Atoi(val)
			if err != nil || k < 2 || k > 64 {
				return bad("k=%s: want a whole number from 2 to 64", val)
			}
			a.Fanout, fanoutSet = k, true
		case part == PartPull:
			a.Pull = true
		case key == "seg" && hasVal:
			if !f.segmented {
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
			return bad("unknown part %q", part)
		}
	}
	switch {
	case a.Pull && f.direct:
		return bad("%s reads in place already: it takes no %s", a.Family, PartPull)
	case a.Pull && f.composite:
		return bad("%s runs other algorithms: it takes no %s", a.Family, PartPull)
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
	f := a.family()
	if f == nil || (len(f.shapes) > 0 && !f.takes(a.Shape)) {
		return Schedule{}, fmt.Errorf("coll: no algorithm %s", a.Name())
	}
	if !commutative && f.commutative {
		return Schedule{}, fmt.Errorf("%s: %w", a.Name(), ErrNotCommutative)
	}
	s := f.build(l, a, commutative)
	s.Pull = a.Pull
	return s, nil
}
