package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/commtune/commtune"
)

// soakOp is one kind of soak step.
type soakOp struct {
	weight int
	// worldOnly steps run on the world communicator: they make and close
	// the derived ones, or use the world's Cart.
	worldOnly bool
	// run runs the step on c, drawing what it needs from rng, and returns
	// the step's name for the report (the kind, and its variant).
	run func(s *soakRank, c *commtune.Comm, rng *rand.Rand) (string, error)
}

// soakOps is the mix, by weight.
var soakOps = []soakOp{
	{weight: 3, run: (*soakRank).p2pPairs},
	{weight: 2, run: (*soakRank).p2pShift},
	{weight: 4, run: (*soakRank).p2pMatrix},
	{weight: 2, run: (*soakRank).p2pPersistent},
	{weight: 10, run: (*soakRank).collective},
	{weight: 2, run: (*soakRank).values},
	{weight: 1, run: (*soakRank).rmaFence},
	{weight: 1, run: (*soakRank).rmaLock},
	{weight: 2, worldOnly: true, run: (*soakRank).haloStep},
	{weight: 1, worldOnly: true, run: (*soakRank).communicators},
}

func pickSoakOp(rng *rand.Rand) soakOp {
	total := 0
	for _, o := range soakOps {
		total += o.weight
	}
	k := rng.IntN(total)
	for _, o := range soakOps {
		if k < o.weight {
			return o
		}
		k -= o.weight
	}
	panic("unreachable")
}

// expect checks got against payload id from offset from and records a
// wrong byte as a payload error of op, rank me receiving.
func (s *soakRank) expect(op string, me int, got []byte, id PayloadID, from int) {
	if off := soakCheckFrom(got, id, from); off >= 0 {
		s.errs.wrong(s.step, op, me, id.Rank, from+off, from+len(got))
	}
}

// expectStatus checks a receive's status.
func (s *soakRank) expectStatus(op string, me int, st commtune.Status, src, tag, count int) {
	if st.Source != src || st.Tag != tag || st.Count != count {
		s.errs.other(s.step, op, me, "status source %d tag %d count %d, want %d, %d, %d", st.Source, st.Tag, st.Count, src, tag, count)
	}
}

// pairing returns this rank's partner in a random perfect matching of
// c's ranks, or -1 (the odd one out).
func pairing(rng *rand.Rand, n, me int) int {
	perm := rng.Perm(n)
	pos := slices.Index(perm, me)
	if pos^1 >= n {
		return -1
	}
	return perm[pos^1]
}

// p2pPairs: blocking Send (or Ssend) and Recv between random pairs, the
// lower rank sending first.
func (s *soakRank) p2pPairs(c *commtune.Comm, rng *rand.Rand) (string, error) {
	n, me := c.Size(), c.Rank()
	peer := pairing(rng, n, me)
	size := logUniform(rng, s.cfg.MaxSize)
	tag := rng.IntN(1 << 15)
	name := "send/recv"
	if rng.IntN(4) == 0 {
		name = "ssend/recv"
	}
	if peer < 0 {
		return name, nil
	}
	out, in := make([]byte, size), make([]byte, size)
	SoakFill(out, s.id(me, 0))
	send := func() error {
		if name == "ssend/recv" {
			return c.Ssend(s.ctx, out, peer, tag)
		}
		return c.Send(s.ctx, out, peer, tag)
	}
	recv := func() error {
		st, err := c.Recv(s.ctx, in, peer, tag)
		if err == nil {
			s.expectStatus(name, me, st, peer, tag, size)
			s.expect(name, me, in, s.id(peer, 0), 0)
		}
		return err
	}
	first, second := send, recv
	if me > peer {
		first, second = recv, send
	}
	if err := first(); err != nil {
		return name, err
	}
	return name, second()
}

// p2pShift: every rank sends to the rank d ahead and receives from the
// one d behind, with Sendrecv or SendrecvReplace.
func (s *soakRank) p2pShift(c *commtune.Comm, rng *rand.Rand) (string, error) {
	n, me := c.Size(), c.Rank()
	d := 1 + rng.IntN(max(n-1, 1))
	size := logUniform(rng, s.cfg.MaxSize)
	tag := rng.IntN(1 << 15)
	replace := rng.IntN(2) == 0
	to, from := (me+d)%n, (me-d%n+n)%n
	out := make([]byte, size)
	SoakFill(out, s.id(me, 0))
	name := "sendrecv"
	var st commtune.Status
	var err error
	in := out
	if replace {
		name = "sendrecv-replace"
		st, err = c.SendrecvReplace(s.ctx, out, to, tag, from, tag)
	} else {
		in = make([]byte, size)
		st, err = c.Sendrecv(s.ctx, out, to, tag, in, from, tag)
	}
	if err != nil {
		return name, err
	}
	s.expectStatus(name, me, st, from, tag, size)
	s.expect(name, me, in, s.id(from, 0), 0)
	return name, nil
}

// p2pMatrix: a random number of messages (0 to 2) from every rank to
// every rank, itself included, of random sizes and tags, sent with Isend
// or Issend and received in one of three ways: Irecv from the sender,
// Irecv from AnySource with AnyTag, or Probe then Recv; WaitAll ends it.
func (s *soakRank) p2pMatrix(c *commtune.Comm, rng *rand.Rand) (string, error) {
	n, me := c.Size(), c.Rank()
	type msg struct {
		size, tag int
		sync      bool
	}
	// Every rank draws the whole matrix, in the same order.
	limit := max(s.cfg.MaxSize/4, 1)
	msgs := make([][][]msg, n)
	for i := range n {
		msgs[i] = make([][]msg, n)
		for j := range n {
			base := rng.IntN(1<<15) * 4
			for k := range rng.IntN(3) {
				msgs[i][j] = append(msgs[i][j], msg{size: logUniform(rng, limit), tag: base + k, sync: rng.IntN(4) == 0})
			}
		}
	}
	mode := []string{"isend/irecv", "isend/irecv-any", "isend/probe-recv"}[rng.IntN(3)]
	recvFirst := rng.IntN(2) == 0
	var reqs []*commtune.Request
	sendAll := func() error {
		for j := range n {
			for k, m := range msgs[me][j] {
				out := make([]byte, m.size)
				SoakFill(out, s.id(me, j<<2|k))
				issue := c.Isend
				if m.sync {
					issue = c.Issend
				}
				q, err := issue(out, j, m.tag)
				if err != nil {
					return err
				}
				reqs = append(reqs, q)
			}
		}
		return nil
	}
	// find names the message from src with tag, or reports it.
	got := map[[2]int]bool{}
	find := func(st commtune.Status) (msg, int, bool) {
		if st.Source >= 0 && st.Source < n {
			for k, m := range msgs[st.Source][me] {
				if m.tag == st.Tag && !got[[2]int{st.Source, k}] {
					got[[2]int{st.Source, k}] = true
					return m, k, true
				}
			}
		}
		s.errs.other(s.step, mode, me, "a message from rank %d with tag %d that was not sent, or twice", st.Source, st.Tag)
		return msg{}, 0, false
	}
	var checks []func([]commtune.Status)
	recvAll := func() error {
		switch mode {
		case "isend/irecv":
			for i := range n {
				for k, m := range msgs[i][me] {
					in := make([]byte, m.size)
					q, err := c.Irecv(in, i, m.tag)
					if err != nil {
						return err
					}
					reqs = append(reqs, q)
					checks = append(checks, func([]commtune.Status) { s.expect(mode, me, in, s.id(i, me<<2|k), 0) })
				}
			}
		case "isend/irecv-any":
			size := 0
			for i := range n {
				for _, m := range msgs[i][me] {
					size = max(size, m.size)
				}
			}
			for i := range n {
				for range msgs[i][me] {
					in := make([]byte, size)
					q, err := c.Irecv(in, commtune.AnySource, commtune.AnyTag)
					if err != nil {
						return err
					}
					reqs = append(reqs, q)
					at := len(reqs) - 1
					checks = append(checks, func(sts []commtune.Status) {
						st := sts[at]
						if m, k, ok := find(st); ok {
							s.expectStatus(mode, me, st, st.Source, m.tag, m.size)
							s.expect(mode, me, in[:min(st.Count, m.size)], s.id(st.Source, me<<2|k), 0)
						}
					})
				}
			}
		}
		return nil
	}
	if recvFirst {
		if err := recvAll(); err != nil {
			return mode, err
		}
	}
	if err := sendAll(); err != nil {
		return mode, err
	}
	if !recvFirst {
		if err := recvAll(); err != nil {
			return mode, err
		}
	}
	if mode == "isend/probe-recv" {
		for i := range n {
			for range msgs[i][me] {
				st, err := c.Probe(s.ctx, commtune.AnySource, commtune.AnyTag)
				if err != nil {
					return mode, err
				}
				in := make([]byte, st.Count)
				rst, err := c.Recv(s.ctx, in, st.Source, st.Tag)
				if err != nil {
					return mode, err
				}
				if m, k, ok := find(rst); ok {
					s.expectStatus(mode, me, rst, st.Source, m.tag, m.size)
					s.expect(mode, me, in[:min(rst.Count, m.size)], s.id(st.Source, me<<2|k), 0)
				}
			}
		}
	}
	sts, err := commtune.WaitAll(s.ctx, reqs...)
	if err != nil {
		return mode, err
	}
	for _, f := range checks {
		f(sts)
	}
	if mode != "isend/irecv" {
		// A receive from any rank with any tag would match a message of
		// the next step from a rank that is already there: every rank
		// finishes this step's receives first.
		return mode, c.Barrier(s.ctx)
	}
	return mode, nil
}

// p2pPersistent: a persistent send to the rank d ahead and receive from
// the one d behind, started 1 to 4 times with new data each time, then
// freed.
func (s *soakRank) p2pPersistent(c *commtune.Comm, rng *rand.Rand) (string, error) {
	const name = "send-init/recv-init"
	n, me := c.Size(), c.Rank()
	d := 1 + rng.IntN(max(n-1, 1))
	size := logUniform(rng, s.cfg.MaxSize)
	tag := rng.IntN(1 << 15)
	rounds := 1 + rng.IntN(4)
	to, from := (me+d)%n, (me-d%n+n)%n
	out, in := make([]byte, size), make([]byte, size)
	ps, err := c.SendInit(out, to, tag)
	if err != nil {
		return name, err
	}
	defer ps.Free()
	pr, err := c.RecvInit(in, from, tag)
	if err != nil {
		return name, err
	}
	defer pr.Free()
	for r := range rounds {
		SoakFill(out, s.id(me, r))
		SoakFill(in, s.sentinel(me))
		if err := commtune.StartAll(pr, ps); err != nil {
			return name, err
		}
		sts, err := commtune.WaitAll(s.ctx, pr, ps)
		if err != nil {
			return name, err
		}
		s.expectStatus(name, me, sts[0], from, tag, size)
		s.expect(name, me, in, s.id(from, r), 0)
	}
	return name, nil
}

// communicators: make a derived communicator (Dup or Split of the world
// or of a derived one), use it once, or close one.
func (s *soakRank) communicators(c *commtune.Comm, rng *rand.Rand) (string, error) {
	if len(s.derived) > 0 && (len(s.derived) == maxDerived || rng.IntN(2) == 0) {
		j := rng.IntN(len(s.derived))
		err := s.derived[j].Close()
		s.derived = slices.Delete(s.derived, j, j+1)
		return "close", err
	}
	parent := c
	if len(s.derived) > 0 && rng.IntN(3) == 0 {
		parent = s.derived[rng.IntN(len(s.derived))]
	}
	kind := rng.IntN(4)
	salt := rng.Uint64()
	var d *commtune.Comm
	name := []string{"dup", "split-halves", "split-parity", "split-undefined"}[kind]
	if parent != nil {
		var err error
		me, n := parent.Rank(), parent.Size()
		switch kind {
		case 0:
			d, err = parent.Dup()
		case 1:
			d, err = parent.Split(s.ctx, 2*me/max(n, 1), int(mix64(salt^uint64(me))%1024))
		case 2:
			d, err = parent.Split(s.ctx, me%2, -me)
		default:
			color := 0
			if me == n-1 && n > 1 {
				color = commtune.Undefined
			}
			d, err = parent.Split(s.ctx, color, me)
		}
		if err != nil {
			return name, err
		}
		if d != nil {
			// One reduction on it, checked, before it joins the mix.
			v := []int64{int64(d.Rank()) + 1}
			sum := make([]int64, 1)
			if err := commtune.Allreduce(s.ctx, d, v, sum, commtune.Sum); err != nil {
				return name, err
			}
			if k := int64(d.Size()); sum[0] != k*(k+1)/2 {
				s.errs.other(s.step, name, d.Rank(), "allreduce of rank+1 on the new communicator of %d ranks gave %d, want %d", k, sum[0], k*(k+1)/2)
			}
		}
	}
	s.derived = append(s.derived, d)
	return name, nil
}

// soakValue is what the Value-typed calls carry: fields of every kind
// gob encodes, the bytes a payload.
type soakValue struct {
	Step int64
	From int
	Part int
	Name string
	Data []byte
}

func (s *soakRank) value(from, part, size int) soakValue {
	v := soakValue{Step: s.step, From: from, Part: part, Name: fmt.Sprintf("rank %d part %d", from, part), Data: make([]byte, size)}
	SoakFill(v.Data, s.id(from, part))
	return v
}

func (s *soakRank) expectValue(op string, me int, got soakValue, from, part, size int) {
	if got.Step != s.step || got.From != from || got.Part != part || got.Name != fmt.Sprintf("rank %d part %d", from, part) || len(got.Data) != size {
		s.errs.other(s.step, op, me, "value step %d from %d part %d name %q with %d bytes, want %d, %d, %d, %d bytes",
			got.Step, got.From, got.Part, got.Name, len(got.Data), s.step, from, part, size)
		return
	}
	s.expect(op, me, got.Data, s.id(from, part), 0)
}

// values: one of the Value-typed calls, with values of random sizes.
func (s *soakRank) values(c *commtune.Comm, rng *rand.Rand) (string, error) {
	n, me := c.Size(), c.Rank()
	sizes := make([]int, n*n)
	for i := range sizes {
		sizes[i] = logUniform(rng, 64<<10)
	}
	root := rng.IntN(n)
	kind := rng.IntN(7)
	name := []string{"send/recv-value", "bcast-value", "gather-values", "allgather-values", "scatter-values", "alltoall-values", "reduce-value"}[kind]
	var err error
	switch kind {
	case 0:
		peer, tag := pairing(rng, n, me), rng.IntN(1<<15)
		if peer < 0 {
			return name, nil
		}
		send := func() error { return commtune.SendValue(s.ctx, c, s.value(me, 0, sizes[me]), peer, tag) }
		recv := func() error {
			v, st, err := commtune.RecvValue[soakValue](s.ctx, c, peer, tag)
			if err == nil {
				if st.Source != peer || st.Tag != tag {
					s.errs.other(s.step, name, me, "status source %d tag %d, want %d, %d", st.Source, st.Tag, peer, tag)
				}
				s.expectValue(name, me, v, peer, 0, sizes[peer])
			}
			return err
		}
		if me > peer {
			send, recv = recv, send
		}
		if err = send(); err == nil {
			err = recv()
		}
	case 1:
		var v soakValue
		if me == root {
			v = s.value(root, 0, sizes[root])
		}
		if v, err = commtune.BcastValue(s.ctx, c, v, root); err == nil {
			s.expectValue(name, me, v, root, 0, sizes[root])
		}
	case 2, 3:
		var vs []soakValue
		if kind == 2 {
			vs, err = commtune.GatherValues(s.ctx, c, s.value(me, 0, sizes[me]), root)
		} else {
			vs, err = commtune.AllgatherValues(s.ctx, c, s.value(me, 0, sizes[me]))
		}
		if err == nil && (kind == 3 || me == root) {
			if len(vs) != n {
				s.errs.other(s.step, name, me, "%d values, want %d", len(vs), n)
				break
			}
			for i, v := range vs {
				s.expectValue(name, me, v, i, 0, sizes[i])
			}
		}
	case 4:
		var vs []soakValue
		if me == root {
			for i := range n {
				vs = append(vs, s.value(root, i, sizes[i]))
			}
		}
		var v soakValue
		if v, err = commtune.ScatterValues(s.ctx, c, vs, root); err == nil {
			s.expectValue(name, me, v, root, me, sizes[me])
		}
	case 5:
		vs := make([]soakValue, n)
		for j := range n {
			vs[j] = s.value(me, j, sizes[me*n+j])
		}
		if vs, err = commtune.AlltoallValues(s.ctx, c, vs); err == nil {
			if len(vs) != n {
				s.errs.other(s.step, name, me, "%d values, want %d", len(vs), n)
				break
			}
			for i, v := range vs {
				s.expectValue(name, me, v, i, me, sizes[i*n+me])
			}
		}
	default:
		word := func(r int) uint64 { return s.id(r, 0).key() }
		var sum uint64
		if sum, err = commtune.ReduceValue(s.ctx, c, word(me), func(a, b uint64) uint64 { return a + b }, root); err == nil && me == root {
			var want uint64
			for r := range n {
				want += word(r)
			}
			if sum != want {
				s.errs.other(s.step, name, me, "sum %#x, want %#x", sum, want)
			}
		}
	}
	return name, err
}
