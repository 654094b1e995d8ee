package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
)

// The mismatch rule (docs/collectives.md): when the ranks of a collective
// call disagree on it, a rank returns nil only with a result no
// disagreeing rank's data reached, and every rank errs within
// MismatchBound: in the call itself, or, for a rank whose part was done
// before any rank could see the disagreement (it only sent, or exchanged
// only with ranks that agree with it), in the next collective call it
// makes on the communicator.

// MismatchBound is how soon every rank of a mismatched call must have
// its error, counted from the start of its call.
const MismatchBound = time.Second

// aloneTries is how many times MismatchRule runs alone a case that broke
// only the bound before it counts as broken: the test packages run beside
// each other on two processors, and a burst of their jobs outlasted one
// rerun (a 3-rank Scan erred after 2.03 s, batched and alone, against a
// usual 0.1 s).
const aloneTries = 3

// MismatchMatrix says which mismatched calls MismatchRule makes: each of
// Ops at each of Sizes under each algorithm Algorithms names for it ("",
// the table's choice, among them), with each rank in turn passing Bad
// elements where the others pass Good.
type MismatchMatrix struct {
	Ops        []coll.Operation
	Sizes      []MismatchSizes
	Algorithms func(coll.Operation, MismatchSizes) []string
	// Batch is how many cases run at once, each on a communicator of its
	// own: a case waits for the disagreement to be seen, which takes
	// most of MismatchBound.
	Batch int
	// Bound overrides MismatchBound when positive.
	Bound time.Duration
	// Idle makes a rank whose call returned nil wait Bound before its
	// next call, as a rank that goes on computing does: the others must
	// find the disagreement without it, and its next call must fail at
	// once.
	Idle bool
}

// MismatchSizes are the elements (int64) per block, or per vector, of the
// ranks that agree and of the one that does not.
type MismatchSizes struct{ Good, Bad int }

// MismatchAlgorithms returns the names of op's algorithms that keep
// reports true for, with "" (the table's choice) first and, when direct,
// op's direct algorithm, which only goroutine ranks of one process run.
func MismatchAlgorithms(op coll.Operation, direct bool, keep func(coll.Algorithm) bool) []string {
	names := []string{""}
	for _, a := range coll.Algorithms(op) {
		if keep(a) {
			names = append(names, a.Name())
		}
	}
	if a, ok := coll.DirectAlgorithm(op); ok && direct {
		names = append(names, a.Name())
	}
	if a, ok := coll.HierarchicalAlgorithm(op); ok {
		names = append(names, a.Name())
	}
	return names
}

// mismatchCall is one rank's part of a mismatch case: the call with
// every block (or vector) of size elements, its input, and the output
// the call gives when every rank passes size (the reference).
type mismatchCall struct {
	op   coll.Operation
	root int
	size int
	in   []int64
	out  []int64
	// counts and displs of the v-variants and ReduceScatter: size each.
	counts, displs []int
}

// mismatchValue is rank r's input element i: distinct per rank and cell,
// so that a cell filled from the wrong rank or left untouched shows.
func mismatchValue(r, i int) int64 { return int64(r+1)*1_000_003 + int64(i)*7 + 11 }

// newMismatchCall makes rank me's buffers for op on n ranks with blocks of
// size elements.
func newMismatchCall(op coll.Operation, n, me, root, size int) *mismatchCall {
	k := &mismatchCall{op: op, root: root, size: size}
	inLen, outLen := size, size
	switch op {
	case coll.OpBarrier:
		inLen, outLen = 0, 0
	case coll.OpScatter, coll.OpScatterv:
		inLen = size * n
	case coll.OpGather, coll.OpGatherv, coll.OpAllgather, coll.OpAllgatherv:
		outLen = size * n
	case coll.OpAlltoall, coll.OpAlltoallv, coll.OpReduceScatterBlock, coll.OpReduceScatter:
		inLen, outLen = size*n, size*n
		if op == coll.OpReduceScatterBlock || op == coll.OpReduceScatter {
			outLen = size
		}
	}
	k.in, k.out = make([]int64, inLen), make([]int64, outLen)
	for i := range k.in {
		k.in[i] = mismatchValue(me, i)
	}
	k.counts, k.displs = make([]int, n), make([]int, n)
	for r := range n {
		k.counts[r], k.displs[r] = size, r*size
	}
	return k
}

// run makes the call on c, forcing alg unless it is "".
func (k *mismatchCall) run(ctx context.Context, c *commtune.Comm, alg string) error {
	var opts []commtune.CollOption
	if alg != "" {
		opts = append(opts, commtune.WithAlgorithm(alg))
	}
	in, out, root := k.in, k.out, k.root
	switch k.op {
	case coll.OpBarrier:
		return c.Barrier(ctx, opts...)
	case coll.OpBcast:
		copy(out, in)
		return commtune.Bcast(ctx, c, out, root, opts...)
	case coll.OpReduce:
		return commtune.Reduce(ctx, c, in, out, commtune.Sum, root, opts...)
	case coll.OpAllreduce:
		return commtune.Allreduce(ctx, c, in, out, commtune.Sum, opts...)
	case coll.OpScatter:
		return commtune.Scatter(ctx, c, in, out, root, opts...)
	case coll.OpGather:
		return commtune.Gather(ctx, c, in, out, root, opts...)
	case coll.OpAllgather:
		return commtune.Allgather(ctx, c, in, out, opts...)
	case coll.OpAlltoall:
		return commtune.Alltoall(ctx, c, in, out, opts...)
	case coll.OpScatterv:
		return commtune.Scatterv(ctx, c, in, k.counts, k.displs, out, root, opts...)
	case coll.OpGatherv:
		return commtune.Gatherv(ctx, c, in, out, k.counts, k.displs, root, opts...)
	case coll.OpAllgatherv:
		return commtune.Allgatherv(ctx, c, in, out, k.counts, k.displs, opts...)
	case coll.OpAlltoallv:
		return commtune.Alltoallv(ctx, c, in, k.counts, k.displs, out, k.counts, k.displs, opts...)
	case coll.OpReduceScatterBlock:
		return commtune.ReduceScatterBlock(ctx, c, in, out, commtune.Sum, opts...)
	case coll.OpReduceScatter:
		return commtune.ReduceScatter(ctx, c, in, out, k.counts, commtune.Sum, opts...)
	case coll.OpScan:
		return commtune.Scan(ctx, c, in, out, commtune.Sum, opts...)
	case coll.OpExscan:
		return commtune.Exscan(ctx, c, in, out, commtune.Sum, opts...)
	}
	return fmt.Errorf("no mismatch call for %s", k.op)
}

// hasResult reports whether rank me has an output in k's call: not a
// non-root of a rooted reduction or gather, nor rank 0 of Exscan.
func (k *mismatchCall) hasResult(me int) bool {
	switch k.op {
	case coll.OpBarrier:
		return false
	case coll.OpReduce, coll.OpGather, coll.OpGatherv:
		return me == k.root
	case coll.OpExscan:
		return me != 0
	}
	return true
}

// mismatchOutcome is what one rank saw in one case.
type mismatchOutcome struct {
	inCall bool          // the call itself failed (else the next one did)
	took   time.Duration // from the call's start to the error
	err    error
	slow   bool // err says only that the right error came after the bound
}

// MismatchRule makes every call of m, on c's ranks, with each rank in turn
// disagreeing on the size (for Barrier: calling Allreduce instead), each
// case on a communicator of its own, Batch at a time. Every rank checks
// the rule on its own part: an error of ErrSizeMismatch or ErrTruncate
// within the bound, from the call or, where the call returned nil with
// the reference result, from a Barrier made next on the same
// communicator. A case whose error came after the bound, on any rank,
// runs again alone, and must keep it then: a batch of cases beside other
// tests may outlast it by load alone. It returns a line per operation and
// the first case that broke the rule on any rank.
func MismatchRule(ctx context.Context, c *commtune.Comm, m MismatchMatrix) ([]string, error) {
	n, me := c.Size(), c.Rank()
	root := n / 2
	bound := MismatchBound
	if m.Bound > 0 {
		bound = m.Bound
	}
	type mcase struct {
		op        int // in m.Ops
		alg       string
		bad       int
		size      MismatchSizes
		reference map[int][]int64 // the output of a call every rank makes at a size
	}
	// The reference outputs at every size, from calls on which every rank
	// agrees; then every case, all operations together, so that each
	// batch of cases that wait for their disagreement is full.
	var cases []mcase
	for i, op := range m.Ops {
		refs := map[int][]int64{}
		for _, sz := range m.Sizes {
			for _, s := range []int{sz.Good, sz.Bad} {
				if _, ok := refs[s]; ok || op == coll.OpBarrier {
					continue
				}
				k := newMismatchCall(op, n, me, root, s)
				if err := k.run(ctx, c, ""); err != nil {
					return nil, fmt.Errorf("%s of %d elements, no mismatch: %w", op, s, err)
				}
				refs[s] = k.out
			}
			for _, alg := range m.Algorithms(op, sz) {
				for bad := range n {
					cases = append(cases, mcase{i, alg, bad, sz, refs})
				}
			}
		}
	}
	// Per operation: cases, errors in the call, in the next call, the
	// slowest error (ns).
	counts := make([]int64, 3*len(m.Ops))
	slowest := make([]int64, len(m.Ops))
	batch := max(m.Batch, 1)
	for lo := 0; lo < len(cases); lo += batch {
		part := cases[lo:min(lo+batch, len(cases))]
		run := func(which []int) ([]mismatchOutcome, error) {
			comms := make([]*commtune.Comm, len(which))
			for i := range which {
				d, err := c.Dup()
				if err != nil {
					return nil, err
				}
				comms[i] = d
			}
			outcomes := make([]mismatchOutcome, len(which))
			var wg sync.WaitGroup
			for i, ci := range which {
				mc := part[ci]
				wg.Go(func() {
					outcomes[i] = mismatchOne(ctx, comms[i], m.Ops[mc.op], mc.alg, root, me == mc.bad, mc.size, mc.reference, bound, m.Idle)
				})
			}
			wg.Wait()
			for _, d := range comms {
				d.Close()
			}
			return outcomes, nil
		}
		all := make([]int, len(part))
		for i := range all {
			all[i] = i
		}
		outcomes, err := run(all)
		if err != nil {
			return nil, err
		}
		// A case that broke only the bound, on any rank, runs again
		// alone: the rule is each call's, and a batch of them, beside
		// other tests on two processors, can outlast it by load alone.
		// Every rank learns which: 1 slow, 2 broken.
		verdict := make([]int32, len(part))
		for i, o := range outcomes {
			switch {
			case o.err != nil && !o.slow:
				verdict[i] = 2
			case o.slow:
				verdict[i] = 1
			}
		}
		if err := commtune.Allreduce(ctx, c, verdict, verdict, commtune.Max); err != nil {
			return nil, err
		}
		for i, v := range verdict {
			if v != 1 {
				continue
			}
			// Up to aloneTries runs: a defect that makes the case slow
			// makes every run slow; a burst of load passes.
			for try := 0; try < aloneTries; try++ {
				again, err := run([]int{i})
				if err != nil {
					return nil, err
				}
				outcomes[i] = again[0]
				slow := []int32{0}
				if again[0].slow {
					slow[0] = 1
				}
				if err := commtune.Allreduce(ctx, c, slow, slow, commtune.Max); err != nil {
					return nil, err
				}
				if slow[0] == 0 {
					break
				}
			}
		}
		var broke error
		for i, mc := range part {
			o := outcomes[i]
			if o.err != nil && broke == nil {
				alg := mc.alg
				if alg == "" {
					alg = "the table's choice"
				}
				broke = fmt.Errorf("%s (%s) on %d ranks, root %d, rank %d passing %d elements, the others %d: rank %d: %w",
					m.Ops[mc.op], alg, n, root, mc.bad, mc.size.Bad, mc.size.Good, me, o.err)
			}
			if me == 0 {
				counts[3*mc.op]++
			}
			if o.inCall {
				counts[3*mc.op+1]++
			} else {
				counts[3*mc.op+2]++
			}
			slowest[mc.op] = max(slowest[mc.op], int64(o.took))
		}
		// Every rank learns whether any broke the rule, so that all stop
		// together.
		flag := []int32{0}
		if broke != nil {
			flag[0] = 1
		}
		if err := commtune.Allreduce(ctx, c, flag, flag, commtune.Max); err != nil {
			return nil, err
		}
		if broke != nil {
			return nil, broke
		}
		if flag[0] != 0 {
			return nil, errors.New("another rank saw the rule broken")
		}
	}
	if err := commtune.Allreduce(ctx, c, counts, counts, commtune.Sum); err != nil {
		return nil, err
	}
	if err := commtune.Allreduce(ctx, c, slowest, slowest, commtune.Max); err != nil {
		return nil, err
	}
	var report []string
	for i, op := range m.Ops {
		report = append(report, fmt.Sprintf("%s: %d cases × %d ranks: errors in the call %d, in the next call %d; slowest %v",
			op, counts[3*i], n, counts[3*i+1], counts[3*i+2], time.Duration(slowest[i]).Round(time.Millisecond)))
	}
	return report, nil
}

// mismatchOne is one rank's part of one case on d: bad says whether this
// rank is the one that disagrees.
func mismatchOne(ctx context.Context, d *commtune.Comm, op coll.Operation, alg string, root int, bad bool,
	sz MismatchSizes, refs map[int][]int64, bound time.Duration, idle bool) mismatchOutcome {
	n, me := d.Size(), d.Rank()
	size := sz.Good
	if bad {
		size = sz.Bad
	}
	k := newMismatchCall(op, n, me, root, size)
	// A safety net far beyond the bound: a rank that waits this long has
	// already broken the rule, and must not hang the job.
	cctx, cancel := context.WithTimeout(ctx, bound+10*time.Second)
	defer cancel()
	start := time.Now()
	var err error
	if op == coll.OpBarrier && bad {
		one := []int64{1}
		err = commtune.Allreduce(cctx, d, one, one, commtune.Sum)
	} else {
		err = k.run(cctx, d, alg)
	}
	o := mismatchOutcome{inCall: err != nil}
	if err == nil {
		// Done with this rank's part before the disagreement could show:
		// its result must be the one the call gives when every rank
		// passes its size, and its next call must fail.
		if ref := refs[size]; k.hasResult(me) && !(op == coll.OpBarrier && bad) && !slices.Equal(k.out, ref) {
			o.err = fmt.Errorf("returned nil with a wrong result (first cells %v, want %v)", head(k.out), head(ref))
			return o
		}
		if idle {
			time.Sleep(bound)
			start = time.Now() // its next call must fail at once, well within the bound
		}
		err = d.Barrier(cctx)
		if err == nil {
			o.err = errors.New("the call and the next one on its communicator both returned nil")
			return o
		}
	}
	o.took = time.Since(start)
	switch {
	case !errors.Is(err, commtune.ErrSizeMismatch) && !errors.Is(err, commtune.ErrTruncate):
		o.err = fmt.Errorf("after %v, an error that does not say the ranks disagree: %w", o.took.Round(time.Millisecond), err)
	case o.took > bound:
		o.err = fmt.Errorf("erred after %v, beyond %v: %s", o.took.Round(time.Millisecond), bound, firstLine(err))
		o.slow = true
	}
	return o
}

// head returns the first few cells of s, for messages.
func head(s []int64) []int64 { return s[:min(len(s), 4)] }

// firstLine returns err's message up to its first line break.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
