package coll

import (
	"fmt"
	"math"
	"strings"

	"github.com/commtune/commtune/internal/units"
)

// Rule is one line of the fixed decision table: it applies to calls on at
// most MaxRanks ranks moving at most MaxBytes (Layout.Bytes: the vector
// for bcast and the reductions — reduce, allreduce, the reduce-scatters,
// scan and exscan —, one rank's block for the others), and to commutative
// reductions only when Commutative is set.
type Rule struct {
	MaxRanks    int
	MaxBytes    int
	Commutative bool
	Algorithm   Algorithm
}

const anySize = math.MaxInt

// decisionTable is the fixed selection (like Open MPI's
// coll_tuned_decision_fixed.c): per operation, the first rule that
// applies wins. Rules for up to 8 ranks were measured with `commtune
// bench coll` (4 and 8 ranks over shared memory on two processors);
// beyond that they follow published practice (MPICH, Open MPI) — the
// reasoning behind each line is in docs/collectives.md.
var decisionTable = map[Operation][]Rule{
	OpBarrier: {
		{anySize, anySize, false, must(OpBarrier, "dissemination")},
	},
	OpBcast: {
		{8, anySize, false, must(OpBcast, "knomial")},
		{anySize, 16 << 10, false, must(OpBcast, "binomial")},
		{anySize, anySize, false, must(OpBcast, "binary:seg=64K")},
	},
	OpReduce: {
		{8, anySize, false, must(OpReduce, "knomial")},
		{anySize, 16 << 10, false, must(OpReduce, "binomial")},
		{anySize, anySize, false, must(OpReduce, "binary:seg=64K")},
	},
	OpAllreduce: {
		{anySize, 8 << 10, false, must(OpAllreduce, "recursive-doubling")},
		{2, anySize, false, must(OpAllreduce, "recursive-doubling")},
		{8, 2 << 20, true, must(OpAllreduce, "rabenseifner")},
		{8, 2 << 20, false, must(OpAllreduce, "reduce-bcast:knomial")},
		{8, anySize, true, must(OpAllreduce, "ring")},
		{anySize, anySize, true, must(OpAllreduce, "rabenseifner")},
		{anySize, anySize, false, must(OpAllreduce, "reduce-bcast:binary:seg=64K")},
	},
	OpScatter: {
		{8, anySize, false, must(OpScatter, "knomial")},
		{anySize, anySize, false, must(OpScatter, "binomial")},
	},
	OpGather: {
		{8, anySize, false, must(OpGather, "knomial")},
		{anySize, anySize, false, must(OpGather, "binomial")},
	},
	OpAllgather: {
		{anySize, 1 << 10, false, must(OpAllgather, "bruck")},
		{anySize, 64 << 10, false, must(OpAllgather, "recursive-doubling")},
		{anySize, anySize, false, must(OpAllgather, "ring")},
	},
	OpAlltoall: {
		{anySize, 1 << 10, false, must(OpAlltoall, "bruck")},
		{anySize, anySize, false, must(OpAlltoall, "pairwise")},
	},
	OpScatterv:           {{anySize, anySize, false, must(OpScatterv, "flat")}},
	OpGatherv:            {{anySize, anySize, false, must(OpGatherv, "flat")}},
	OpAllgatherv:         {{anySize, anySize, false, must(OpAllgatherv, "ring")}},
	OpAlltoallv:          {{anySize, anySize, false, must(OpAlltoallv, "pairwise")}},
	OpReduceScatterBlock: reduceScatterRules(OpReduceScatterBlock),
	OpReduceScatter:      reduceScatterRules(OpReduceScatter),
	OpScan:               scanRules(OpScan),
	OpExscan:             scanRules(OpExscan),
}

// reduceScatterRules are the rules of ReduceScatterBlock and
// ReduceScatter, by the whole vector's size.
func reduceScatterRules(op Operation) []Rule {
	return []Rule{
		{8, 8 << 10, false, must(op, "reduce-scatterv:knomial")},
		{8, anySize, true, must(op, "ring")},
		{8, anySize, false, must(op, "reduce-scatterv:knomial")},
		{anySize, 512 << 10, true, must(op, "recursive-halving")},
		{anySize, anySize, true, must(op, "ring")},
		{anySize, 8 << 10, false, must(op, "recursive-doubling")},
		{anySize, anySize, false, must(op, "reduce-scatterv:binomial")},
	}
}

// scanRules are the rules of Scan and Exscan.
func scanRules(op Operation) []Rule {
	return []Rule{
		{8, anySize, false, must(op, "linear")},
		{anySize, 64 << 10, false, must(op, "recursive-doubling")},
		{anySize, anySize, false, must(op, "linear:seg=64K")},
	}
}

func must(op Operation, spec string) Algorithm {
	a, err := Parse(op, spec)
	if err != nil {
		panic(err)
	}
	return a
}

// pulledTable holds the rules for calls whose messages are pulled
// (Algorithm.Pull), looked at before decisionTable's: an algorithm that
// sends every block straight from its owner gains most from single copy,
// and loses most without it.
var pulledTable = map[Operation][]Rule{
	// 4 ranks on 2 processors, back to back: 64K 66–72 µs against 77–93
	// for ring/pull and 97–132 for recursive-doubling/pull; 1M 1020–1161
	// against 1126–1373 (ring/pull). Not pulled, linear took 1.6× ring's
	// time at 1M.
	OpAllgather: {
		{8, anySize, false, must(OpAllgather, "linear")},
	},
}

// Decide returns the fixed table's algorithm for op on ranks ranks moving
// bytes (see Rule), for a reduction that is commutative or not.
func Decide(op Operation, ranks, bytes int, commutative bool) Algorithm {
	return DecidePulled(op, ranks, bytes, commutative, false)
}

// DecidePulled is Decide for a call that pulls its messages (pulled) or
// not: a pulled call looks at the rules of pulledTable first.
func DecidePulled(op Operation, ranks, bytes int, commutative, pulled bool) Algorithm {
	if pulled {
		if a, ok := firstRule(pulledTable[op], ranks, bytes, commutative); ok {
			return a
		}
	}
	if a, ok := firstRule(decisionTable[op], ranks, bytes, commutative); ok {
		return a
	}
	panic(fmt.Sprintf("coll: no decision for %s", op))
}

func firstRule(rules []Rule, ranks, bytes int, commutative bool) (Algorithm, bool) {
	for _, r := range rules {
		if ranks <= r.MaxRanks && bytes <= r.MaxBytes && (commutative || !r.Commutative) {
			return r.Algorithm, true
		}
	}
	return Algorithm{}, false
}

// Rules returns op's rules in order.
func Rules(op Operation) []Rule { return decisionTable[op] }

// PulledRules returns op's rules for pulled calls, looked at first.
func PulledRules(op Operation) []Rule { return pulledTable[op] }

// DecisionTable prints the table, one rule per line, for documentation
// and `commtune info`.
func DecisionTable() string {
	var b strings.Builder
	w := OpNameWidth()
	for _, op := range Operations {
		for _, r := range pulledTable[op] {
			fmt.Fprintf(&b, "%-*s ranks ≤ %-4s bytes ≤ %-5s %-11s %s (when pulled)\n", w, op, limit(r.MaxRanks), size(r.MaxBytes), cond(r.Commutative), r.Algorithm.Name())
		}
		for _, r := range decisionTable[op] {
			fmt.Fprintf(&b, "%-*s ranks ≤ %-4s bytes ≤ %-5s %-11s %s\n", w, op, limit(r.MaxRanks), size(r.MaxBytes), cond(r.Commutative), r.Algorithm.Name())
		}
	}
	return b.String()
}

// OpNameWidth is the length of the longest operation's name, to align
// tables.
func OpNameWidth() int {
	w := 0
	for _, op := range Operations {
		w = max(w, len(op))
	}
	return w
}

// Unlimited is a Rule's MaxRanks or MaxBytes when it has no bound.
const Unlimited = anySize

func limit(n int) string {
	if n == anySize {
		return "any"
	}
	return fmt.Sprint(n)
}

func size(n int) string {
	if n == anySize {
		return "any"
	}
	return units.FormatSize(int64(n))
}

func cond(commutative bool) string {
	if commutative {
		return "commutative"
	}
	return ""
}
