package coll

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
)

// Candidates returns the algorithms a run-time selector may draw for a
// call of op on ranks ranks moving bytes (as Decide counts them): the fixed
// table's choice first, which is what runs before anything is measured,
// then a few others picked by their attributes. The list is kept short on
// purpose: a lottery touches every candidate at least once (seed 001 §6.3,
// E[I] ∝ |Z| lg|Z|), so candidates are the shapes and segment sizes that
// can win at this size, not every member of every family, and a candidate
// whose every rank's schedule equals an earlier one's on this many ranks
// is left out (on two ranks most tree shapes coincide), unless that would
// leave one: a list of one runs without a draw. Operations with
// per-rank counts (the v-variants) have one family and no candidates.
// Every rank computes the same list from the same arguments; the slice is
// shared and must not be modified.
func Candidates(op Operation, ranks, bytes int, commutative bool) []Algorithm {
	k := candidateKey{op, ranks, bytes, commutative}
	candidatesMu.Lock()
	defer candidatesMu.Unlock()
	if c, ok := candidatesCache[k]; ok {
		return c
	}
	if len(candidatesCache) >= maxCandidateLists {
		clear(candidatesCache)
	}
	c := buildCandidates(op, ranks, bytes, commutative)
	candidatesCache[k] = c
	return c
}

type candidateKey struct {
	op           Operation
	ranks, bytes int
	commutative  bool
}

// maxCandidateLists bounds the cache; a program calling many sizes starts
// it again when full.
const maxCandidateLists = 1024

var (
	candidatesMu    sync.Mutex
	candidatesCache = map[candidateKey][]Algorithm{}
)

// bruckMaxBlock is the largest block an Alltoall offers Bruck's
// algorithm for: it moves each block about ⌈log2 n⌉/2 times where
// pairwise moves it once, so it wins only while a message's fixed cost
// dominates the copy (at 64 ranks, with a few µs a message, below about
// 4 KiB a block), and its scratch holds every block (2 MiB of a 64-rank
// Alltoall of 16 KiB, against the program's own buffers of 1 MiB each).
const bruckMaxBlock = 4 << 10

func buildCandidates(op Operation, ranks, bytes int, commutative bool) []Algorithm {
	var specs []string
	switch op {
	case OpBarrier:
		specs = []string{"dissemination", "tree:binomial", "tree:knomial"}
	case OpBcast, OpReduce:
		if bytes < 16<<10 {
			specs = []string{"binomial", "knomial", "binary"}
			if ranks <= 8 {
				specs = append(specs, "flat")
			}
			break
		}
		seg := "seg=" + segmentNear(bytes, ranks)
		specs = []string{"binomial", "knomial", "binary", "chain", "binomial:" + seg, "knomial:" + seg, "binary:" + seg, "chain:" + seg}
	case OpAllreduce:
		specs = []string{"recursive-doubling", "reduce-bcast:binomial", "reduce-bcast:knomial", "ring", "rabenseifner"}
		if bytes >= 64<<10 {
			seg := "seg=" + segmentNear(bytes, ranks)
			specs = append(specs, "reduce-bcast:binomial:"+seg, "reduce-bcast:binary:"+seg, "reduce-bcast:chain:"+seg)
		}
	case OpScatter, OpGather:
		specs = []string{"binomial", "knomial", "flat", "binary", "chain"}
	case OpAllgather:
		specs = []string{"bruck", "recursive-doubling", "ring"}
	case OpAlltoall:
		specs = []string{"pairwise"}
		if bytes <= bruckMaxBlock {
			specs = append(specs, "bruck")
		}
	case OpReduceScatterBlock, OpReduceScatter:
		specs = []string{"recursive-halving", "ring", "recursive-doubling", "reduce-scatterv:binomial", "reduce-scatterv:knomial"}
	case OpScan, OpExscan:
		specs = []string{"recursive-doubling", "linear"}
		if bytes >= 64<<10 {
			specs = append(specs, "linear:seg="+segmentNear(bytes, ranks))
		}
	default:
		return nil
	}
	out := []Algorithm{Decide(op, ranks, bytes, commutative)}
	scheds := [][]Schedule{schedules(out[0], ranks, bytes, commutative)}
	var twin *Algorithm // the first left out for running the same steps
	for _, s := range specs {
		a := must(op, s)
		if (!commutative && a.Commutative()) || contains(out, a) {
			continue
		}
		sc := schedules(a, ranks, bytes, commutative)
		if sc != nil && slices.ContainsFunc(scheds, func(o []Schedule) bool { return reflect.DeepEqual(o, sc) }) {
			if twin == nil {
				twin = &a
			}
			continue // another candidate already runs these very steps
		}
		out, scheds = append(out, a), append(scheds, sc)
	}
	if len(out) == 1 && twin != nil {
		// A list of one would run without a draw, and ranks that pass
		// different sizes to one call (an error to report) must still
		// meet in one protocol: one draws, another not, and a
		// hierarchical call's node phase waited out its deadline. Two
		// names for the same steps cost the lottery nothing to tell.
		out = append(out, *twin)
	}
	return out
}

// StepsDigest names what a runs on ranks ranks for bytes bytes of float64
// rooted at 0: a digest of every rank's schedule, equal for two names that
// run the very same steps (on two ranks, a binomial and a 4-nomial Bcast);
// "" where it cannot tell (too many ranks, a path without a schedule).
func StepsDigest(a Algorithm, ranks, bytes int, commutative bool) string {
	sc := schedules(a, ranks, bytes, commutative)
	if sc == nil {
		return ""
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%+v", sc))
	return hex.EncodeToString(sum[:8])
}

// dedupRanks bounds the communicators whose candidates are compared step by
// step: on few ranks tree shapes coincide (on two, every tree is one
// edge, and a binomial, binary, chain and 4-nomial Bcast are the same
// sends), and a lottery would spend its exploration on twins; on many
// they differ and building every rank's schedule costs more than it saves.
const dedupRanks = 16

// schedules returns every rank's schedule of a for a call of bytes bytes
// of float64 rooted at 0, or nil when there are too many ranks to compare
// or it does not build.
func schedules(a Algorithm, ranks, bytes int, commutative bool) []Schedule {
	if ranks > dedupRanks || a.IsDirect() || a.IsHierarchical() {
		return nil
	}
	out := make([]Schedule, ranks)
	for r := range out {
		s, err := a.Build(Layout{Size: ranks, Rank: r, Bytes: bytes &^ 7, Elem: 8}, commutative)
		if err != nil {
			return nil
		}
		out[r] = s
	}
	return out
}

// segmentNear returns the pipeline segment of Segments closest to a
// quarter of the message on up to eight ranks, a sixteenth on more:
// enough segments to overlap the rounds of a tree that deep, few enough
// that each stays well above per-message costs. (On 2 and 4 ranks over
// shared memory, 2 processors, quarters won at every size measured: 64
// KiB Bcasts in 16 KiB segments took 0.65× the time of 4 KiB ones, 1 MiB
// ones in 256 KiB segments 0.74–0.93× that of 64 KiB ones; the best 64
// KiB Allreduce on 4 ranks was reduce-bcast in 16 KiB segments.)
func segmentNear(bytes, ranks int) string {
	part := bytes / 16
	if ranks <= 8 {
		part = bytes / 4
	}
	best := Segments[1]
	for _, s := range Segments[1:] {
		if absDiff(s, part) < absDiff(best, part) {
			best = s
		}
	}
	return sizeText(best)
}

func absDiff(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}

func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "M"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "K"
	}
	return strconv.Itoa(n)
}

func contains(as []Algorithm, a Algorithm) bool {
	for _, b := range as {
		if b == a {
			return true
		}
	}
	return false
}
