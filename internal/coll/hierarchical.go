package coll

// Hierarchical is the family of the algorithms that follow the job's
// nodes, as Open MPI's coll/han: the ranks of each node meet first (through
// the node segment where they share one, else by their own algorithm),
// one leader per node then runs the operation over the network, and each
// leader hands the result to its node. Few messages cross between nodes,
// and never two of one node at once for one call. It has no schedule of its
// own: the communicator runs its phases as calls of a node communicator and
// of the leaders' one, each with the algorithm its table chooses.
const Hierarchical = "hierarchical"

// hierarchicalOps are the operations Hierarchical implements.
var hierarchicalOps = []Operation{OpBarrier, OpBcast, OpReduce, OpAllreduce}

// HierarchicalAlgorithm returns op's hierarchical algorithm, if op has one.
func HierarchicalAlgorithm(op Operation) (Algorithm, bool) {
	switch op {
	case OpBarrier, OpBcast, OpReduce, OpAllreduce:
		return Algorithm{Op: op, Family: Hierarchical}, true
	}
	return Algorithm{}, false
}

// IsHierarchical reports whether a runs in phases over the job's nodes:
// it has no schedule, the communicator runs it (Hierarchical).
func (a Algorithm) IsHierarchical() bool { return a.Family == Hierarchical }

// hierarchicalFamilies returns the family Hierarchical of each operation
// it covers. Its reductions combine each node's contributions first, so
// they need a commutative operation.
func hierarchicalFamilies() []family {
	out := make([]family, len(hierarchicalOps))
	for i, op := range hierarchicalOps {
		out[i] = family{op: op, name: Hierarchical, composite: true, commutative: op.Reduces(),
			build: func(Layout, Algorithm, bool) Schedule { return Schedule{} }}
	}
	return out
}
