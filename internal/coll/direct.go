package coll

import (
	"context"
	"fmt"
)

// Direct is the family of the algorithms that read the other ranks'
// buffers in place instead of passing messages: each rank copies (or
// reduces) straight from where the data lies, one copy per byte, with no
// ring in between. It needs ranks that share an address space (goroutine
// ranks of one process); a Team gives an algorithm their buffers.
const Direct = "direct"

// Team is what a direct algorithm sees of the ranks of its call.
type Team interface {
	// Meet publishes this rank's in and out for the call and returns once
	// the ranks it reads have published theirs: every rank (All), one, or
	// none (Nobody: a rank that only gives, as the root of an inline
	// broadcast). Inline says the call moves little: the team keeps a
	// copy of in, so that the others may still read it after this rank
	// has left; a call that is not inline must wait for All.
	Meet(ctx context.Context, in, out []byte, inline bool, from int) error
	// In and Out return rank's published buffers (In: the copy, inline).
	// Another rank's Out may be written only where the algorithm says so.
	In(rank int) []byte
	Out(rank int) []byte
	// Fence returns once every rank has reached it.
	Fence(ctx context.Context) error
	// Leave ends the call: unless it was inline, it returns once no rank
	// reads or writes this rank's buffers any more (a Fence).
	Leave(ctx context.Context) error
}

// Whom Team.Meet waits for, besides a rank.
const (
	All    = -1
	Nobody = -2
)

// InlineMax is the most bytes a rank publishes by copy (Team.Meet's
// inline): below it a copy costs less than the fence at the end of the
// call that reading in place needs.
const InlineMax = 1 << 10

// directOps are the operations Direct implements.
var directOps = []Operation{OpBarrier, OpBcast, OpReduce, OpAllreduce, OpScatter, OpGather, OpAllgather, OpAlltoall}

// DirectAlgorithm returns op's direct algorithm, if op has one. Every
// call of goroutine ranks asks: it looks up no table.
func DirectAlgorithm(op Operation) (Algorithm, bool) {
	switch op {
	case OpBarrier, OpBcast, OpReduce, OpAllreduce, OpScatter, OpGather, OpAllgather, OpAlltoall:
		return Algorithm{Op: op, Family: Direct}, true
	}
	return Algorithm{}, false
}

// IsDirect reports whether a reads the other ranks' buffers in place: it
// has no schedule, RunDirect runs it over a Team.
func (a Algorithm) IsDirect() bool { return a.Family == Direct }

// directFamilies returns the family Direct of each operation it covers.
func directFamilies() []family {
	out := make([]family, len(directOps))
	for i, op := range directOps {
		out[i] = family{op: op, name: Direct, direct: true, build: func(Layout, Algorithm, bool) Schedule { return Schedule{} }}
	}
	return out
}

// RunDirect carries out op's direct algorithm for this rank (l.Rank) of
// the team, with the buffers as the schedules take them. Reductions
// combine in rank order, so non-commutative operations are reduced as MPI
// defines.
func RunDirect(ctx context.Context, t Team, op Operation, l Layout, in, out []byte, reduce Reducer) error {
	if op.Reduces() && reduce == nil {
		return fmt.Errorf("coll: %s/%s with no reduction operation", op, Direct)
	}
	p, r, n := l.Size, l.Rank, l.Bytes
	switch op {
	case OpBarrier:
		if err := t.Meet(ctx, nil, nil, true, All); err != nil {
			return err
		}
		return t.Leave(ctx)
	case OpBcast:
		inline := n <= InlineMax
		var mine []byte
		if r == l.Root {
			mine = out
		}
		if err := t.Meet(ctx, mine, out, inline, fromRoot(inline, r, l.Root)); err != nil {
			return err
		}
		if r != l.Root {
			copyCached(out, t.In(l.Root))
		}
		return t.Leave(ctx)
	case OpGather:
		inline := n <= InlineMax
		if err := t.Meet(ctx, in, out, inline, toRoot(inline, r, l.Root)); err != nil {
			return err
		}
		if r == l.Root {
			for j := range p {
				copyCached(out[j*n:(j+1)*n], t.In(j))
			}
		}
		return t.Leave(ctx)
	case OpScatter:
		inline := n*p <= InlineMax
		if err := t.Meet(ctx, in, out, inline, fromRoot(inline, r, l.Root)); err != nil {
			return err
		}
		copyCached(out, t.In(l.Root)[r*n:(r+1)*n])
		return t.Leave(ctx)
	case OpAllgather:
		if err := t.Meet(ctx, in, out, n <= InlineMax, All); err != nil {
			return err
		}
		for j := range p {
			copyCached(out[j*n:(j+1)*n], t.In(j))
		}
		return t.Leave(ctx)
	case OpAlltoall:
		if err := t.Meet(ctx, in, out, n*p <= InlineMax, All); err != nil {
			return err
		}
		for j := range p {
			copyCached(out[j*n:(j+1)*n], t.In(j)[r*n:(r+1)*n])
		}
		return t.Leave(ctx)
	case OpReduce, OpAllreduce:
		return reduceDirect(ctx, t, op, l, in, out, reduce)
	}
	return fmt.Errorf("coll: %s has no %s algorithm", op, Direct)
}

// reduceDirect runs Reduce and Allreduce. A small vector is reduced whole
// by every rank that needs it, from the others' inline copies: one meeting
// and no fence. A large one is split into one part per rank; rank j
// reduces part j of every input in place into the root's output (Reduce)
// or into its own, whence the others copy it after a fence (Allreduce):
// each byte is read once per input and written once per output.
func reduceDirect(ctx context.Context, t Team, op Operation, l Layout, in, out []byte, reduce Reducer) error {
	p, r, n := l.Size, l.Rank, l.Bytes
	if n <= InlineMax {
		from := All
		if op == OpReduce {
			from = toRoot(true, r, l.Root)
		}
		if err := t.Meet(ctx, in, out, true, from); err != nil {
			return err
		}
		if op == OpAllreduce || r == l.Root {
			reduceAll(t, out, 0, n, p, reduce)
		}
		return t.Leave(ctx)
	}
	if err := t.Meet(ctx, in, out, false, All); err != nil {
		return err
	}
	lo, hi := part(n, l.Elem, p, r)
	dst := out
	if op == OpReduce {
		dst = t.Out(l.Root)
	}
	reduceAll(t, dst[lo:hi], lo, hi-lo, p, reduce)
	if op == OpAllreduce {
		if err := t.Fence(ctx); err != nil {
			return err
		}
		for j := range p {
			if j != r {
				jlo, jhi := part(n, l.Elem, p, j)
				copyCached(out[jlo:jhi], t.Out(j)[jlo:jhi])
			}
		}
	}
	return t.Leave(ctx)
}

// fromRoot is whom a rank of an operation that hands the root's data out
// waits for: the root (the root: nobody), when inline.
func fromRoot(inline bool, r, root int) int {
	switch {
	case !inline:
		return All
	case r == root:
		return Nobody
	}
	return root
}

// toRoot is whom a rank of an operation that brings data to the root
// waits for: all (the others: nobody), when inline.
func toRoot(inline bool, r, root int) int {
	if inline && r != root {
		return Nobody
	}
	return All
}

// reduceAll sets dst to bytes [off, off+n) of every rank's input combined
// in rank order.
func reduceAll(t Team, dst []byte, off, n, p int, reduce Reducer) {
	copyCached(dst, t.In(0)[off:off+n])
	for j := 1; j < p; j++ {
		reduce(dst, t.In(j)[off:off+n], false)
	}
}

// part returns the bytes [lo, hi) of an n-byte vector of elem-byte
// elements that rank j of p reduces: the elements split as evenly as they
// go.
func part(n, elem, p, j int) (lo, hi int) {
	elems := n / elem
	return j * elems / p * elem, (j + 1) * elems / p * elem
}
