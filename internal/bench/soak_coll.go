package bench

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/commtune/commtune"
)

// collForms are a collective's three forms: blocking, nonblocking
// (I…, then Wait) and persistent (…Init once, Start and Wait per round,
// Free).
type collForms struct {
	block func(ctx context.Context) error
	start func(ctx context.Context) (*commtune.CollRequest, error)
	init  func() (*commtune.Prequest, error)
}

// soakCollectives are the collectives a step draws from.
var soakCollectives = []string{"barrier", "bcast", "reduce", "allreduce", "reduce-scatter-block", "reduce-scatter",
	"scan", "exscan", "gather", "scatter", "allgather", "alltoall", "gatherv", "scatterv", "allgatherv", "alltoallv"}

// soakReduction is a reduction operator and what it does to two elements.
type soakReduction struct {
	name string
	op   commtune.Op
	fn   func(a, b uint32) uint32
}

var soakReductions = []soakReduction{
	{"sum", commtune.Sum, func(a, b uint32) uint32 { return a + b }},
	{"bxor", commtune.BXor, func(a, b uint32) uint32 { return a ^ b }},
	{"max", commtune.Max, func(a, b uint32) uint32 { return max(a, b) }},
	{"min", commtune.Min, func(a, b uint32) uint32 { return min(a, b) }},
}

// roundPart is the payload part of block in a persistent request's round
// (0 for the other forms).
func roundPart(round, block int) int { return round<<16 | block }

// collective: one collective of the library, drawn with its form, sizes,
// root and operator; every rank's contribution is its own payload, and
// every result is checked against what the ranks' payloads make.
func (s *soakRank) collective(c *commtune.Comm, rng *rand.Rand) (string, error) {
	n, me := c.Size(), c.Rank()
	which := soakCollectives[rng.IntN(len(soakCollectives))]
	form := []string{"blocking", "nonblocking", "persistent"}[rng.IntN(3)]
	rounds := 1
	if form == "persistent" {
		rounds = 1 + rng.IntN(3)
	}
	name := which + " " + form
	root := rng.IntN(n)
	red := soakReductions[rng.IntN(len(soakReductions))]
	vec := logUniform(rng, s.cfg.MaxSize)           // bytes of a vector
	blk := logUniform(rng, max(s.cfg.MaxSize/n, 1)) // bytes of one rank's block
	counts := make([]int, n)                        // v-variants: one rank's block, in bytes
	for i := range counts {
		counts[i] = logUniform(rng, max(s.cfg.MaxSize/n, 1))
	}
	// alltoallv: the bytes rank i sends rank j, and each rank's layouts.
	pair := make([]int, n*n)
	for i := range pair {
		pair[i] = logUniform(rng, max(s.cfg.MaxSize/(n*n), 1))
	}
	sendLayouts, recvLayouts := make([][]int, n), make([][]int, n)
	sendTotals, recvTotals := make([]int, n), make([]int, n)
	for i := range n {
		sc, rc := make([]int, n), make([]int, n)
		for j := range n {
			sc[j], rc[j] = pair[i*n+j], pair[j*n+i]
		}
		sendLayouts[i], sendTotals[i] = vLayout(rng, sc)
		recvLayouts[i], recvTotals[i] = vLayout(rng, rc)
	}
	displs, total := vLayout(rng, counts)

	var f collForms
	var refill, check func(round int)
	noop := func(int) {}
	switch which {
	case "barrier":
		f = collForms{func(ctx context.Context) error { return c.Barrier(ctx) }, func(ctx context.Context) (*commtune.CollRequest, error) { return c.Ibarrier(ctx) }, func() (*commtune.Prequest, error) { return c.BarrierInit() }}
		refill, check = noop, noop
	case "bcast":
		buf := make([]byte, vec)
		f = collForms{
			func(ctx context.Context) error { return commtune.Bcast(ctx, c, buf, root) },
			func(ctx context.Context) (*commtune.CollRequest, error) { return commtune.Ibcast(ctx, c, buf, root) },
			func() (*commtune.Prequest, error) { return commtune.BcastInit(c, buf, root) },
		}
		refill = func(r int) {
			if me == root {
				SoakFill(buf, s.id(root, roundPart(r, 0)))
			} else {
				SoakFill(buf, s.sentinel(me))
			}
		}
		check = func(r int) { s.expect(name, me, buf, s.id(root, roundPart(r, 0)), 0) }
	case "reduce", "allreduce", "scan", "exscan":
		name += " " + red.name
		elems := vec / 4
		send, recv := make([]uint32, elems), make([]uint32, elems)
		switch which {
		case "reduce":
			f = collForms{
				func(ctx context.Context) error { return commtune.Reduce(ctx, c, send, recv, red.op, root) },
				func(ctx context.Context) (*commtune.CollRequest, error) {
					return commtune.Ireduce(ctx, c, send, recv, red.op, root)
				},
				func() (*commtune.Prequest, error) { return commtune.ReduceInit(c, send, recv, red.op, root) },
			}
		case "allreduce":
			f = collForms{
				func(ctx context.Context) error { return commtune.Allreduce(ctx, c, send, recv, red.op) },
				func(ctx context.Context) (*commtune.CollRequest, error) {
					return commtune.Iallreduce(ctx, c, send, recv, red.op)
				},
				func() (*commtune.Prequest, error) { return commtune.AllreduceInit(c, send, recv, red.op) },
			}
		case "scan":
			f = collForms{
				func(ctx context.Context) error { return commtune.Scan(ctx, c, send, recv, red.op) },
				func(ctx context.Context) (*commtune.CollRequest, error) {
					return commtune.Iscan(ctx, c, send, recv, red.op)
				},
				func() (*commtune.Prequest, error) { return commtune.ScanInit(c, send, recv, red.op) },
			}
		default:
			f = collForms{
				func(ctx context.Context) error { return commtune.Exscan(ctx, c, send, recv, red.op) },
				func(ctx context.Context) (*commtune.CollRequest, error) {
					return commtune.Iexscan(ctx, c, send, recv, red.op)
				},
				func() (*commtune.Prequest, error) { return commtune.ExscanInit(c, send, recv, red.op) },
			}
		}
		refill = func(r int) {
			SoakFill(commtune.Bytes(send), s.id(me, roundPart(r, 0)))
			SoakFill(commtune.Bytes(recv), s.sentinel(me))
		}
		check = func(r int) {
			lo, hi := 0, n // the ranks whose contributions the result holds
			switch which {
			case "reduce":
				if me != root {
					return
				}
			case "scan":
				hi = me + 1
			case "exscan":
				if me == 0 {
					return // undefined
				}
				hi = me
			}
			s.expectReduced(name, me, recv, red, lo, hi, roundPart(r, 0), 0)
		}
	case "reduce-scatter-block", "reduce-scatter":
		name += " " + red.name
		rc := make([]int, n)
		for i := range rc {
			rc[i] = blk / 4
			if which == "reduce-scatter" {
				rc[i] = counts[i] / 4
			}
		}
		at, all := 0, 0
		for i, k := range rc {
			if i < me {
				at += k
			}
			all += k
		}
		send, recv := make([]uint32, all), make([]uint32, rc[me])
		if which == "reduce-scatter-block" {
			f = collForms{
				func(ctx context.Context) error { return commtune.ReduceScatterBlock(ctx, c, send, recv, red.op) },
				func(ctx context.Context) (*commtune.CollRequest, error) {
					return commtune.IreduceScatterBlock(ctx, c, send, recv, red.op)
				},
				func() (*commtune.Prequest, error) { return commtune.ReduceScatterBlockInit(c, send, recv, red.op) },
			}
		} else {
			f = collForms{
				func(ctx context.Context) error { return commtune.ReduceScatter(ctx, c, send, recv, rc, red.op) },
				func(ctx context.Context) (*commtune.CollRequest, error) {
					return commtune.IreduceScatter(ctx, c, send, recv, rc, red.op)
				},
				func() (*commtune.Prequest, error) { return commtune.ReduceScatterInit(c, send, recv, rc, red.op) },
			}
		}
		refill = func(r int) {
			SoakFill(commtune.Bytes(send), s.id(me, roundPart(r, 0)))
			SoakFill(commtune.Bytes(recv), s.sentinel(me))
		}
		check = func(r int) { s.expectReduced(name, me, recv, red, 0, n, roundPart(r, 0), at) }
	case "gather", "allgather":
		send, recv := make([]byte, blk), make([]byte, blk*n)
		if which == "gather" {
			f = collForms{
				func(ctx context.Context) error { return commtune.Gather(ctx, c, send, recv, root) },
				func(ctx context.Context) (*commtune.CollRequest, error) {
					return commtune.Igather(ctx, c, send, recv, root)
				},
				func() (*commtune.Prequest, error) { return commtune.GatherInit(c, send, recv, root) },
			}
		} else {
			f = collForms{
				func(ctx context.Context) error { return commtune.Allgather(ctx, c, send, recv) },
				func(ctx context.Context) (*commtune.CollRequest, error) {
					return commtune.Iallgather(ctx, c, send, recv)
				},
				func() (*commtune.Prequest, error) { return commtune.AllgatherInit(c, send, recv) },
			}
		}
		refill = func(r int) {
			SoakFill(send, s.id(me, roundPart(r, 0)))
			SoakFill(recv, s.sentinel(me))
		}
		check = func(r int) {
			if which == "gather" && me != root {
				return
			}
			for i := range n {
				s.expect(name, me, recv[i*blk:(i+1)*blk], s.id(i, roundPart(r, 0)), 0)
			}
		}
	case "scatter", "alltoall":
		send, recv := make([]byte, blk*n), make([]byte, blk)
		from := func(int) int { return root }
		if which == "scatter" {
			f = collForms{
				func(ctx context.Context) error { return commtune.Scatter(ctx, c, send, recv, root) },
				func(ctx context.Context) (*commtune.CollRequest, error) {
					return commtune.Iscatter(ctx, c, send, recv, root)
				},
				func() (*commtune.Prequest, error) { return commtune.ScatterInit(c, send, recv, root) },
			}
		} else {
			recv = make([]byte, blk*n)
			from = func(i int) int { return i }
			f = collForms{
				func(ctx context.Context) error { return commtune.Alltoall(ctx, c, send, recv) },
				func(ctx context.Context) (*commtune.CollRequest, error) {
					return commtune.Ialltoall(ctx, c, send, recv)
				},
				func() (*commtune.Prequest, error) { return commtune.AlltoallInit(c, send, recv) },
			}
		}
		refill = func(r int) {
			for j := range n {
				SoakFill(send[j*blk:(j+1)*blk], s.id(me, roundPart(r, j)))
			}
			SoakFill(recv, s.sentinel(me))
		}
		check = func(r int) {
			if which == "scatter" {
				s.expect(name, me, recv, s.id(root, roundPart(r, me)), 0)
				return
			}
			for i := range n {
				s.expect(name, me, recv[i*blk:(i+1)*blk], s.id(from(i), roundPart(r, me)), 0)
			}
		}
	case "gatherv", "allgatherv":
		send, recv := make([]byte, counts[me]), make([]byte, total)
		if which == "gatherv" {
			f = collForms{
				func(ctx context.Context) error { return commtune.Gatherv(ctx, c, send, recv, counts, displs, root) },
				func(ctx context.Context) (*commtune.CollRequest, error) {
					return commtune.Igatherv(ctx, c, send, recv, counts, displs, root)
				},
				func() (*commtune.Prequest, error) { return commtune.GathervInit(c, send, recv, counts, displs, root) },
			}
		} else {
			f = collForms{
				func(ctx context.Context) error { return commtune.Allgatherv(ctx, c, send, recv, counts, displs) },
				func(ctx context.Context) (*commtune.CollRequest, error) {
					return commtune.Iallgatherv(ctx, c, send, recv, counts, displs)
				},
				func() (*commtune.Prequest, error) { return commtune.AllgathervInit(c, send, recv, counts, displs) },
			}
		}
		refill = func(r int) {
			SoakFill(send, s.id(me, roundPart(r, 0)))
			SoakFill(recv, s.sentinel(me))
		}
		check = func(r int) {
			if which == "gatherv" && me != root {
				return
			}
			s.expectBlocks(name, me, recv, counts, displs, func(i int) PayloadID { return s.id(i, roundPart(r, 0)) })
		}
	case "scatterv":
		send, recv := make([]byte, total), make([]byte, counts[me])
		f = collForms{
			func(ctx context.Context) error { return commtune.Scatterv(ctx, c, send, counts, displs, recv, root) },
			func(ctx context.Context) (*commtune.CollRequest, error) {
				return commtune.Iscatterv(ctx, c, send, counts, displs, recv, root)
			},
			func() (*commtune.Prequest, error) { return commtune.ScattervInit(c, send, counts, displs, recv, root) },
		}
		refill = func(r int) {
			SoakFill(send, s.sentinel(me))
			for j := range n {
				SoakFill(send[displs[j]:displs[j]+counts[j]], s.id(me, roundPart(r, j)))
			}
			SoakFill(recv, s.sentinel(me))
		}
		check = func(r int) { s.expect(name, me, recv, s.id(root, roundPart(r, me)), 0) }
	case "alltoallv":
		sc, rc := make([]int, n), make([]int, n)
		for j := range n {
			sc[j], rc[j] = pair[me*n+j], pair[j*n+me]
		}
		sd, rd := sendLayouts[me], recvLayouts[me]
		send, recv := make([]byte, sendTotals[me]), make([]byte, recvTotals[me])
		f = collForms{
			func(ctx context.Context) error { return commtune.Alltoallv(ctx, c, send, sc, sd, recv, rc, rd) },
			func(ctx context.Context) (*commtune.CollRequest, error) {
				return commtune.Ialltoallv(ctx, c, send, sc, sd, recv, rc, rd)
			},
			func() (*commtune.Prequest, error) { return commtune.AlltoallvInit(c, send, sc, sd, recv, rc, rd) },
		}
		refill = func(r int) {
			SoakFill(send, s.sentinel(me))
			for j := range n {
				SoakFill(send[sd[j]:sd[j]+sc[j]], s.id(me, roundPart(r, j)))
			}
			SoakFill(recv, s.sentinel(me))
		}
		check = func(r int) {
			s.expectBlocks(name, me, recv, rc, rd, func(i int) PayloadID { return s.id(i, roundPart(r, me)) })
		}
	default:
		return name, fmt.Errorf("no collective %q", which)
	}
	return name, s.runColl(form, rounds, f, refill, check)
}

// runColl runs a collective in form: refill before each call (each start,
// persistent), check after it.
func (s *soakRank) runColl(form string, rounds int, f collForms, refill, check func(round int)) error {
	switch form {
	case "blocking":
		refill(0)
		if err := f.block(s.ctx); err != nil {
			return err
		}
	case "nonblocking":
		refill(0)
		q, err := f.start(s.ctx)
		if err != nil {
			return err
		}
		if err := q.Wait(s.ctx); err != nil {
			return err
		}
	default:
		p, err := f.init()
		if err != nil {
			return err
		}
		defer p.Free()
		for r := range rounds {
			refill(r)
			if err := p.Start(); err != nil {
				return err
			}
			if _, err := p.Wait(s.ctx); err != nil {
				return err
			}
			check(r)
		}
		return nil
	}
	check(0)
	return nil
}

// vLayout places blocks of counts in a buffer in a random order, with
// gaps of 0 to 3 bytes before each and after the last, and returns their
// displacements and the buffer's length: a v-variant's layout, whose gaps
// must come through untouched.
func vLayout(rng *rand.Rand, counts []int) (displs []int, total int) {
	displs = make([]int, len(counts))
	for _, i := range rng.Perm(len(counts)) {
		total += rng.IntN(4)
		displs[i] = total
		total += counts[i]
	}
	return displs, total + rng.IntN(4)
}

// expectBlocks checks block i of buf (counts[i] bytes at displs[i])
// against payload id(i), and every byte outside the blocks against this
// rank's sentinel.
func (s *soakRank) expectBlocks(op string, me int, buf []byte, counts, displs []int, id func(int) PayloadID) {
	covered := make([]bool, len(buf))
	for i := range counts {
		b := buf[displs[i] : displs[i]+counts[i]]
		s.expect(op, me, b, id(i), 0)
		for k := range b {
			covered[displs[i]+k] = true
		}
	}
	for a := 0; a < len(buf); {
		if covered[a] {
			a++
			continue
		}
		b := a
		for b < len(buf) && !covered[b] {
			b++
		}
		if off := soakCheckFrom(buf[a:b], s.sentinel(me), a); off >= 0 {
			s.errs.other(s.step, op, me, "a byte outside every block, at offset %d of %d, was written", a+off, len(buf))
		}
		a = b
	}
}

// expectReduced checks got against the reduction with red of ranks lo to
// hi-1's payloads part, from element at of each.
func (s *soakRank) expectReduced(op string, me int, got []uint32, red soakReduction, lo, hi, part, at int) {
	want := make([]uint32, len(got))
	tmp := make([]uint32, len(got))
	for r := lo; r < hi; r++ {
		dst := want
		if r > lo {
			dst = tmp
		}
		soakFillFrom(commtune.Bytes(dst), s.id(r, part), 4*at)
		if r > lo {
			for k := range want {
				want[k] = red.fn(want[k], tmp[k])
			}
		}
	}
	for k := range got {
		if got[k] != want[k] {
			s.errs.wrong(s.step, op, me, -1, 4*k, 4*len(got))
			return
		}
	}
}
