package coll

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// memTeam is a Team of goroutines over a cyclic barrier: the reference the
// runtime's team is held to.
type memTeam struct {
	mu      sync.Mutex
	cond    *sync.Cond
	arrived int
	gen     int
	ins     [][]byte
	outs    [][]byte
	inline  []bool
}

func newMemTeam(p int) *memTeam {
	t := &memTeam{ins: make([][]byte, p), outs: make([][]byte, p), inline: make([]bool, p)}
	t.cond = sync.NewCond(&t.mu)
	return t
}

func (t *memTeam) barrier() {
	t.mu.Lock()
	defer t.mu.Unlock()
	gen := t.gen
	t.arrived++
	if t.arrived == len(t.ins) {
		t.arrived, t.gen = 0, t.gen+1
		t.cond.Broadcast()
		return
	}
	for gen == t.gen {
		t.cond.Wait()
	}
}

// member is rank r's view of a memTeam.
type member struct {
	t *memTeam
	r int
}

func (m member) Meet(_ context.Context, in, out []byte, inline bool, from int) error {
	if from != All && !inline {
		return fmt.Errorf("a meeting of rank %d waits for %d, not all, though not inline", m.r, from)
	}
	if inline {
		in = bytes.Clone(in)
	}
	m.t.mu.Lock()
	m.t.ins[m.r], m.t.outs[m.r], m.t.inline[m.r] = in, out, inline
	m.t.mu.Unlock()
	m.t.barrier()
	return nil
}

func (m member) In(r int) []byte  { return m.t.ins[r] }
func (m member) Out(r int) []byte { return m.t.outs[r] }
func (m member) Fence(context.Context) error {
	m.t.barrier()
	return nil
}

func (m member) Leave(context.Context) error {
	if !m.t.inline[m.r] {
		m.t.barrier()
	}
	return nil
}

// affineBytes is a non-commutative reduction of bytes: dst = 3·dst + src
// (src ⊕ dst when srcFirst).
func affineBytes(dst, src []byte, srcFirst bool) {
	for i := range dst {
		if srcFirst {
			dst[i] = 3*src[i] + dst[i]
		} else {
			dst[i] = 3*dst[i] + src[i]
		}
	}
}

// TestRunDirect runs every direct algorithm on teams of 1 to 5 ranks, at
// sizes on both sides of InlineMax, with every root, and checks each
// rank's output against the operation's definition (reductions in rank
// order with a non-commutative operation).
func TestRunDirect(t *testing.T) {
	for _, op := range directOps {
		for p := 1; p <= 5; p++ {
			for _, n := range []int{0, 8, 40, InlineMax, InlineMax + 8, 3000} {
				for root := range p {
					if root > 0 && op != OpBcast && op != OpReduce && op != OpScatter && op != OpGather {
						break
					}
					name := fmt.Sprintf("%s/p=%d/n=%d/root=%d", op, p, n, root)
					t.Run(name, func(t *testing.T) { checkDirect(t, op, p, n, root) })
				}
			}
		}
	}
}

func checkDirect(t *testing.T, op Operation, p, n, root int) {
	rng := rand.New(rand.NewPCG(uint64(p), uint64(n)))
	inLen, outLen := directSizes(op, p, n)
	in, out := make([][]byte, p), make([][]byte, p)
	for r := range p {
		in[r] = make([]byte, inLen)
		for i := range in[r] {
			in[r][i] = byte(rng.Uint32())
		}
		out[r] = make([]byte, outLen)
		if op == OpBcast && r == root {
			copy(out[r], in[r])
		}
	}
	want := directWant(op, p, n, root, in, out)
	team := newMemTeam(p)
	errs := make([]error, p)
	var wg sync.WaitGroup
	for r := range p {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := Layout{Size: p, Rank: r, Root: root, Bytes: n, Elem: 1}
			errs[r] = RunDirect(context.Background(), member{team, r}, op, l, in[r], out[r], affineBytes)
		}()
	}
	wg.Wait()
	for r := range p {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
		if want[r] != nil && !bytes.Equal(out[r], want[r]) {
			t.Errorf("rank %d: output differs from the operation's definition", r)
		}
	}
}

// directSizes returns each rank's input and output length for op.
func directSizes(op Operation, p, n int) (in, out int) {
	switch op {
	case OpBarrier:
		return 0, 0
	case OpBcast:
		return n, n
	case OpReduce, OpAllreduce, OpAllgather:
		if op == OpAllgather {
			return n, n * p
		}
		return n, n
	case OpScatter:
		return n * p, n
	case OpGather:
		return n, n * p
	case OpAlltoall:
		return n * p, n * p
	}
	panic(op)
}

// directWant returns each rank's expected output (nil: not checked).
func directWant(op Operation, p, n, root int, in, out [][]byte) [][]byte {
	want := make([][]byte, p)
	fold := func() []byte {
		acc := bytes.Clone(in[0])
		for j := 1; j < p; j++ {
			affineBytes(acc, in[j], false)
		}
		return acc
	}
	for r := range p {
		switch op {
		case OpBcast:
			want[r] = bytes.Clone(out[root])
		case OpReduce:
			if r == root {
				want[r] = fold()
			}
		case OpAllreduce:
			want[r] = fold()
		case OpScatter:
			want[r] = bytes.Clone(in[root][r*n : (r+1)*n])
		case OpGather:
			if r == root {
				want[r] = bytes.Join(in, nil)
			}
		case OpAllgather:
			want[r] = bytes.Join(in, nil)
		case OpAlltoall:
			for j := range p {
				want[r] = append(want[r], in[j][r*n:(r+1)*n]...)
			}
		}
	}
	return want
}

// TestDirectAlgorithm: the operations DirectAlgorithm names are those with
// a direct family.
func TestDirectAlgorithm(t *testing.T) {
	for _, op := range Operations {
		a, ok := DirectAlgorithm(op)
		if has := lookupFamily(op, Direct) != nil; ok != has || ok && (a.Op != op || !a.IsDirect()) {
			t.Errorf("%s: DirectAlgorithm = %v, %v; family table has direct: %v", op, a, ok, has)
		}
	}
}

// TestDecidePulled: a pulled call looks at the pulled rules first; one
// that does not pull never gets them.
func TestDecidePulled(t *testing.T) {
	for _, tc := range []struct {
		op          Operation
		ranks, size int
		pulled      bool
		want        string
	}{
		{OpAllgather, 4, 64 << 10, true, "allgather/linear"},
		{OpAllgather, 4, 64 << 10, false, Decide(OpAllgather, 4, 64<<10, false).Name()},
		{OpAllgather, 16, 1 << 20, true, Decide(OpAllgather, 16, 1<<20, false).Name()},
		{OpBcast, 4, 1 << 20, true, Decide(OpBcast, 4, 1<<20, false).Name()},
	} {
		if got := DecidePulled(tc.op, tc.ranks, tc.size, false, tc.pulled).Name(); got != tc.want {
			t.Errorf("%s on %d ranks, %d bytes, pulled %v: %s, want %s", tc.op, tc.ranks, tc.size, tc.pulled, got, tc.want)
		}
	}
	if Decide(OpAllgather, 4, 64<<10, false).Name() == "allgather/linear" {
		t.Error("the table runs linear without pulling")
	}
}
