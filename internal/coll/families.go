package coll

import "slices"

// family is one family of algorithms of one operation, with every
// attribute the rest of the package derives from it: what Algorithms
// enumerates, what Parse accepts, how Name spells it, which reductions
// Build refuses, and how it builds a schedule. Adding a variant is adding
// an entry to familyTable (and, for a new tree shape, to shapes).
type family struct {
	op   Operation
	name string
	// shapes are the trees the family runs on; nil for none. A family
	// named after its tree (bcast/binomial) has that one shape; one that
	// takes the tree as a part of its name (allreduce/reduce-bcast/binary)
	// lists every tree it accepts (Parse's default is Binomial, else the
	// first).
	shapes []Shape
	// segmented families pipeline in segments (seed 001 §3.2): the name
	// carries seg=, and Algorithms lists every size of Segments.
	segmented bool
	// commutative families reorder contributions, so they need a
	// commutative reduction.
	commutative bool
	// pulled families list their pulled form too (Algorithm.Pull).
	pulled bool
	// direct families read the other ranks' buffers in place (Direct):
	// they have no schedule, and Algorithms leaves them out.
	direct bool
	// composite families run other algorithms on parts of the ranks
	// (Hierarchical): they have no schedule, and Algorithms leaves them
	// out.
	composite bool
	// build returns rank l.Rank's schedule of a, a member of the family,
	// for a reduction that is commutative or not.
	build func(l Layout, a Algorithm, commutative bool) Schedule
}

// shapes are the trees of seed 001 §3.1, plus k-nomial, in the order
// Algorithms lists them.
var shapes = []Shape{Flat, Chain, Binary, Binomial, Knomial}

// familyTable is every family of every operation, in the order
// Algorithms lists them.
var familyTable = concat(
	[]family{
		{op: OpBarrier, name: Dissemination, build: plain(barrierDissemination)},
		{op: OpBarrier, name: Tree, shapes: shapes, build: func(l Layout, a Algorithm, _ bool) Schedule {
			return barrierTree(l, a.Shape, a.Fanout)
		}},
	},
	treeFamilies(OpBcast, true, func(l Layout, a Algorithm, _ bool) Schedule {
		return bcastSchedule(l, a.Shape, a.Fanout, a.Segment)
	}),
	treeFamilies(OpReduce, true, func(l Layout, a Algorithm, commutative bool) Schedule {
		return reduceSchedule(l, a.Shape, a.Fanout, a.Segment, commutative)
	}),
	[]family{
		{op: OpAllreduce, name: ReduceBcast, shapes: shapes, segmented: true, build: func(l Layout, a Algorithm, _ bool) Schedule {
			return allreduceReduceBcast(l, a.Shape, a.Fanout, a.Segment)
		}},
		{op: OpAllreduce, name: RecursiveDoubling, build: plain(allreduceDoubling)},
		{op: OpAllreduce, name: Ring, commutative: true, build: plain(allreduceRing)},
		{op: OpAllreduce, name: Rabenseifner, commutative: true, build: plain(allreduceRabenseifner)},
	},
	treeFamilies(OpScatter, false, func(l Layout, a Algorithm, _ bool) Schedule {
		return scatterSchedule(l, a.Shape, a.Fanout)
	}),
	treeFamilies(OpGather, false, func(l Layout, a Algorithm, _ bool) Schedule {
		return gatherSchedule(l, a.Shape, a.Fanout)
	}),
	[]family{
		{op: OpAllgather, name: Ring, build: plain(allgatherRing)},
		{op: OpAllgather, name: RecursiveDoubling, build: plain(allgatherDoubling)},
		{op: OpAllgather, name: Bruck, build: plain(allgatherBruck)},
		{op: OpAllgather, name: Linear, build: plain(allgatherLinear)},
		{op: OpAlltoall, name: Pairwise, build: plain(alltoallPairwise)},
		{op: OpAlltoall, name: Bruck, build: plain(alltoallBruck)},
		// The v-variants have one family each. Flat is a tree shape, so
		// scatterv/flat carries Shape Flat like scatter/flat.
		{op: OpScatterv, name: string(Flat), shapes: []Shape{Flat}, build: plain(scattervFlat)},
		{op: OpGatherv, name: string(Flat), shapes: []Shape{Flat}, build: plain(gathervFlat)},
		{op: OpAllgatherv, name: Ring, build: plain(allgathervRing)},
		{op: OpAlltoallv, name: Pairwise, build: plain(alltoallvPairwise)},
	},
	reduceScatterFamilies(OpReduceScatterBlock),
	reduceScatterFamilies(OpReduceScatter),
	scanFamilies(OpScan, false),
	scanFamilies(OpExscan, true),
	directFamilies(),
	hierarchicalFamilies(),
)

// reduceScatterFamilies returns the families of op, ReduceScatterBlock or
// ReduceScatter: their schedules read the blocks from the layout.
func reduceScatterFamilies(op Operation) []family {
	return []family{
		{op: op, name: RecursiveHalving, commutative: true, build: plain(reduceScatterHalving)},
		{op: op, name: Ring, commutative: true, build: plain(reduceScatterRing)},
		{op: op, name: RecursiveDoubling, build: plain(reduceScatterDoubling)},
		{op: op, name: ReduceScatterv, shapes: shapes, build: func(l Layout, a Algorithm, _ bool) Schedule {
			return reduceScatterTree(l, a.Shape, a.Fanout)
		}},
	}
}

// scanFamilies returns the families of Scan, or of Exscan (exclusive).
func scanFamilies(op Operation, exclusive bool) []family {
	linear := scanLinear
	if exclusive {
		linear = exscanLinear
	}
	return []family{
		{op: op, name: RecursiveDoubling, build: func(l Layout, _ Algorithm, _ bool) Schedule {
			return scanDoubling(l, exclusive)
		}},
		{op: op, name: Linear, segmented: true, build: func(l Layout, a Algorithm, _ bool) Schedule {
			return linear(l, a.Segment)
		}},
	}
}

// treeFamilies returns op's families named after a tree shape, one per
// shape, all built by build.
func treeFamilies(op Operation, segmented bool, build func(Layout, Algorithm, bool) Schedule) []family {
	out := make([]family, len(shapes))
	for i, sh := range shapes {
		out[i] = family{op: op, name: string(sh), shapes: []Shape{sh}, segmented: segmented, build: build}
	}
	return out
}

// plain adapts a schedule that depends on the layout alone.
func plain(f func(Layout) Schedule) func(Layout, Algorithm, bool) Schedule {
	return func(l Layout, _ Algorithm, _ bool) Schedule { return f(l) }
}

func concat(lists ...[]family) []family {
	var out []family
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

type familyKey struct {
	op   Operation
	name string
}

// familyIndex finds a family by operation and name; opFamilies lists each
// operation's families in table order.
var familyIndex, opFamilies = indexFamilies(markPulled(familyTable, pulledFamilies))

// pulledFamilies are the families Algorithms lists pulled too: those
// whose ranks receive from several peers, or large blocks, where a copy
// saved per byte counts (seed 004 §4.2).
var pulledFamilies = []familyKey{
	{OpBcast, string(Binomial)}, {OpBcast, string(Knomial)},
	{OpReduce, string(Binomial)}, {OpReduce, string(Knomial)},
	{OpAllreduce, RecursiveDoubling}, {OpAllreduce, Ring}, {OpAllreduce, Rabenseifner},
	{OpScatter, string(Flat)}, {OpScatter, string(Binomial)},
	{OpGather, string(Flat)}, {OpGather, string(Binomial)},
	{OpAllgather, Ring}, {OpAllgather, RecursiveDoubling}, {OpAllgather, Bruck}, {OpAllgather, Linear},
	{OpAlltoall, Pairwise},
}

// markPulled sets pulled on the families of table that keys name.
func markPulled(table []family, keys []familyKey) []family {
	for i := range table {
		if slices.Contains(keys, familyKey{table[i].op, table[i].name}) {
			table[i].pulled = true
		}
	}
	return table
}

func indexFamilies(table []family) (map[familyKey]*family, map[Operation][]*family) {
	index := map[familyKey]*family{}
	byOp := map[Operation][]*family{}
	for i := range table {
		f := &table[i]
		k := familyKey{f.op, f.name}
		if index[k] != nil {
			panic("coll: family " + string(f.op) + "/" + f.name + " listed twice")
		}
		index[k] = f
		byOp[f.op] = append(byOp[f.op], f)
	}
	return index, byOp
}

// lookupFamily returns op's family named name, or nil.
func lookupFamily(op Operation, name string) *family {
	return familyIndex[familyKey{op, name}]
}

// namedByShape reports whether f is named after its one tree
// (bcast/binomial), rather than taking the tree as a part of its name
// (barrier/tree/flat).
func (f *family) namedByShape() bool {
	return len(f.shapes) == 1 && string(f.shapes[0]) == f.name
}

// takes reports whether f runs on trees of shape sh.
func (f *family) takes(sh Shape) bool {
	for _, s := range f.shapes {
		if s == sh {
			return true
		}
	}
	return false
}
