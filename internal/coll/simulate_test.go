package coll

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/commtune/commtune/internal/testenv"
)

// elemType is an element type and a reduction to check the reductions
// with, and its sequential reference.
type elemType struct {
	name    string
	size    int
	commute bool
	reduce  Reducer
	combine func(a, b []byte) // a = a ⊕ b on one element, for the reference
}

func mustKernel(op OpCode, k reflect.Kind) Reducer {
	r, err := Kernel(op, k)
	if err != nil {
		panic(err)
	}
	return r
}

// affine is a non-commutative, associative operation: an element is the
// map x → m·x + c on uint32 (m in the high half, c in the low half), and a
// ⊕ b is "a, then b". Its result depends on the order of every operand.
func affine(a, b uint64) uint64 {
	ma, ca := uint32(a>>32), uint32(a)
	mb, cb := uint32(b>>32), uint32(b)
	return uint64(mb*ma)<<32 | uint64(mb*ca+cb)
}

func affineReducer(dst, src []byte, srcFirst bool) {
	for i := 0; i+8 <= len(dst); i += 8 {
		d, s := binary.LittleEndian.Uint64(dst[i:]), binary.LittleEndian.Uint64(src[i:])
		if srcFirst {
			d = affine(s, d)
		} else {
			d = affine(d, s)
		}
		binary.LittleEndian.PutUint64(dst[i:], d)
	}
}

var elemTypes = []elemType{
	{"int32/sum", 4, true, mustKernel(OpSum, reflect.Int32), func(a, b []byte) {
		binary.LittleEndian.PutUint32(a, binary.LittleEndian.Uint32(a)+binary.LittleEndian.Uint32(b))
	}},
	{"uint8/bxor", 1, true, mustKernel(OpBXor, reflect.Uint8), func(a, b []byte) { a[0] ^= b[0] }},
	{"float64/max", 8, true, mustKernel(OpMax, reflect.Float64), func(a, b []byte) {
		x, y := binary.LittleEndian.Uint64(a), binary.LittleEndian.Uint64(b)
		if f64(y) > f64(x) {
			binary.LittleEndian.PutUint64(a, y)
		}
	}},
	{"affine/noncommutative", 8, false, affineReducer, func(a, b []byte) {
		binary.LittleEndian.PutUint64(a, affine(binary.LittleEndian.Uint64(a), binary.LittleEndian.Uint64(b)))
	}},
}

// randomData fills n bytes with elements of et: floats are finite, so
// that max is exact; bytes otherwise.
func randomData(rng *rand.Rand, n int, et elemType) []byte {
	b := make([]byte, n)
	if et.name == "float64/max" {
		for i := 0; i+8 <= n; i += 8 {
			binary.LittleEndian.PutUint64(b[i:], f64bits(float64(rng.IntN(2000)-1000)/8))
		}
		return b
	}
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

// The cases' sizes in elements: empty, one, odd, one 1K segment, several
// segments of every segment size up to 4K; the 1 MiB case runs on fewer
// communicator sizes.
func elemCounts(elem int) []int {
	return []int{0, 1, 7, 1024 / elem, (5*4096 + 12) / elem}
}

const mib = 1 << 20

// bigSizes are the communicator sizes the 1 MiB messages run on.
var bigSizes = map[int]bool{1: true, 2: true, 3: true, 8: true, 13: true}

// roots returns every root of a communicator of n ranks.
func roots(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// problem is one call's data on every rank and the expected result.
type problem struct {
	op         Operation
	n, root, b int
	et         elemType
	in, out    [][]byte // inputs, and outputs as they are before the call
	want       [][]byte // nil where the output is not checked
	// vec and counts are the layout's Bytes and Counts when they are not
	// b and nil (the reduce-scatters).
	vec    int
	counts []int
}

func (p problem) String() string {
	s := fmt.Sprintf("n=%d root=%d bytes=%d %s", p.n, p.root, p.b, p.et.name)
	if p.counts != nil {
		s += fmt.Sprintf(" counts=%v", p.counts)
	}
	return s
}

// layout is rank r's layout of p.
func (p problem) layout(r int) Layout {
	l := Layout{Size: p.n, Rank: r, Root: p.root, Bytes: p.b, Elem: p.et.size, Counts: p.counts}
	if p.vec > 0 || p.counts != nil {
		l.Bytes = p.vec
	}
	return l
}

// unevenCounts draws n block lengths of about mean elements each, a
// quarter of them empty.
func unevenCounts(rng *rand.Rand, n, mean int) []int {
	counts := make([]int, n)
	for r := range counts {
		if rng.IntN(4) > 0 {
			counts[r] = rng.IntN(2*mean + 1)
		}
	}
	return counts
}

// newProblem draws the inputs of one call and computes the expected
// outputs sequentially.
func newProblem(op Operation, n, root, b int, et elemType, seed uint64) problem {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	p := problem{op: op, n: n, root: root, b: b, et: et,
		in: make([][]byte, n), out: make([][]byte, n), want: make([][]byte, n)}
	in, out, want := p.in, p.out, p.want
	// foldTo is the reduction of ranks 0 … last's inputs.
	foldTo := func(last int) []byte {
		acc := append([]byte(nil), in[0]...)
		for r := 1; r <= last; r++ {
			for i := 0; i+et.size <= len(acc); i += et.size {
				et.combine(acc[i:i+et.size], in[r][i:i+et.size])
			}
		}
		return acc
	}
	fold := func() []byte { return foldTo(n - 1) }
	switch op {
	case OpBcast:
		data := randomData(rng, b, et)
		for r := range out {
			out[r] = make([]byte, b)
			want[r] = data
		}
		copy(out[root], data)
	case OpReduce, OpAllreduce:
		for r := range in {
			in[r] = randomData(rng, b, et)
		}
		res := fold()
		for r := range out {
			if op == OpAllreduce || r == root {
				out[r] = make([]byte, b)
				want[r] = res
			}
		}
	case OpScatter:
		in[root] = randomData(rng, n*b, et)
		for r := range out {
			out[r] = make([]byte, b)
			want[r] = in[root][r*b : (r+1)*b]
		}
	case OpGather, OpAllgather:
		all := randomData(rng, n*b, et)
		for r := range in {
			in[r] = all[r*b : (r+1)*b]
			if op == OpAllgather || r == root {
				out[r] = make([]byte, n*b)
				want[r] = all
			}
		}
	case OpReduceScatterBlock, OpReduceScatter:
		// b is a block's length: ReduceScatter's blocks are uneven
		// around it.
		off := make([]int, n+1)
		if op == OpReduceScatter {
			p.counts = unevenCounts(rng, n, b/et.size)
		}
		for r := 0; r < n; r++ {
			off[r+1] = off[r] + b
			if p.counts != nil {
				off[r+1] = off[r] + p.counts[r]*et.size
			}
		}
		p.vec = off[n]
		for r := range in {
			in[r] = randomData(rng, p.vec, et)
		}
		res := fold()
		for r := range out {
			out[r] = make([]byte, off[r+1]-off[r])
			want[r] = res[off[r]:off[r+1]]
		}
	case OpScan, OpExscan:
		for r := range in {
			in[r] = randomData(rng, b, et)
		}
		for r := range out {
			// Exscan leaves rank 0's output as it was.
			out[r] = randomData(rng, b, et)
			switch {
			case op == OpScan:
				want[r] = foldTo(r)
			case r == 0:
				want[r] = append([]byte(nil), out[r]...)
			default:
				want[r] = foldTo(r - 1)
			}
		}
	case OpAlltoall:
		for r := range in {
			in[r] = randomData(rng, n*b, et)
		}
		for r := range out {
			out[r] = make([]byte, n*b)
			want[r] = make([]byte, n*b)
			for s := 0; s < n; s++ {
				copy(want[r][s*b:], in[s][r*b:(r+1)*b])
			}
		}
	}
	return p
}

// check builds every rank's schedule of alg, simulates it and compares
// with the reference. It returns ErrNotCommutative when alg refuses.
func (p problem) check(alg Algorithm) error {
	scheds := make([]Schedule, p.n)
	for r := range scheds {
		s, err := alg.Build(p.layout(r), p.et.commute)
		if err != nil {
			return err
		}
		scheds[r] = s
	}
	if p.op == OpBarrier {
		return runBarrier(scheds)
	}
	// Inputs are shared: Simulate refuses a schedule that writes one.
	out := make([][]byte, p.n)
	for r := range out {
		if p.out[r] != nil {
			out[r] = append([]byte(nil), p.out[r]...)
		}
	}
	if err := Simulate(scheds, p.in, out, p.et.reduce); err != nil {
		return err
	}
	for r := range out {
		if p.want[r] != nil && !bytes.Equal(out[r], p.want[r]) {
			return fmt.Errorf("rank %d: output differs from the reference at byte %d", r, firstDiff(out[r], p.want[r]))
		}
	}
	return nil
}

// runBarrier checks a barrier's one property: no rank leaves before every
// rank has entered. Each message is made to carry what its sender knows
// (a byte per rank that has entered, as far as it has heard), and every
// rank must know of all at the end.
func runBarrier(scheds []Schedule) error {
	n := len(scheds)
	in, out := make([][]byte, n), make([][]byte, n)
	for r := range scheds {
		var s Schedule
		for ri, round := range scheds[r].Rounds {
			slot := 0
			for _, st := range round {
				if st.Len != 0 || st.Buf != In {
					return fmt.Errorf("rank %d: barrier step %v moves data", r, st)
				}
				switch st.Kind {
				case Send:
					s.add(ri, Step{Kind: Send, Peer: st.Peer, Buf: Out, Len: n})
				case Recv:
					s.add(ri, Step{Kind: Recv, Peer: st.Peer, Buf: Tmp, Off: slot * n, Len: n})
					slot++
				}
			}
			for k := 0; k < slot; k++ {
				s.add(ri, Step{Kind: Reduce, Buf: Out, Len: n, From: Tmp, FromOff: k * n})
			}
			s.TmpSize = max(s.TmpSize, slot*n)
		}
		scheds[r] = s
		out[r] = make([]byte, n)
		out[r][r] = 1
	}
	if err := Simulate(scheds, in, out, func(dst, src []byte, _ bool) {
		for i := range dst {
			dst[i] |= src[i]
		}
	}); err != nil {
		return err
	}
	for r := range out {
		if i := bytes.IndexByte(out[r], 0); i >= 0 {
			return fmt.Errorf("rank %d leaves the barrier before hearing that rank %d entered", r, i)
		}
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// testAlgorithms are the algorithms checked: every one "all" benchmarks,
// plus k-nomial trees of other fan-outs.
func testAlgorithms(op Operation) []Algorithm {
	algs := Algorithms(op)
	for _, a := range algs {
		if a.Shape == Knomial && a.Fanout == DefaultFanout && a.Segment == 0 {
			for _, k := range []int{3, 8} {
				b := a
				b.Fanout = k
				algs = append(algs, b)
			}
		}
	}
	return algs
}

// TestScheduleMatrix checks every algorithm on communicators of 1 to 17
// ranks, every root, empty to many-segment messages (and 1 MiB on a few
// sizes), with element types and reductions of 1, 4 and 8 bytes including
// a non-commutative one, against a sequential reference. The
// reduce-scatters take the sizes as one rank's block (a 1 MiB vector for
// the largest), ReduceScatter's blocks drawn uneven around it, some
// empty. The simulations run in one goroutine: the race detector would
// slow them tenfold and find nothing. With -short, communicators of 1 to
// 8 ranks and no 1 MiB messages.
func TestScheduleMatrix(t *testing.T) {
	testenv.SkipUnderRace(t, "single-goroutine simulations")
	maxRanks, big := 17, bigSizes
	if testing.Short() {
		maxRanks, big = 8, nil
	}
	for _, op := range []Operation{OpBarrier, OpBcast, OpReduce, OpAllreduce, OpScatter, OpGather, OpAllgather, OpAlltoall,
		OpReduceScatterBlock, OpReduceScatter, OpScan, OpExscan} {
		t.Run(string(op), func(t *testing.T) {
			t.Parallel()
			algs := testAlgorithms(op)
			reduction := op.Reduces()
			cases, refused := 0, 0
			for n := 1; n <= maxRanks; n++ {
				rootList := []int{0}
				if op == OpBcast || op == OpReduce || op == OpScatter || op == OpGather {
					rootList = roots(n)
				}
				for _, et := range elemTypes {
					// Moving data, only the element size matters.
					if !reduction && (et.name == "affine/noncommutative" || op == OpBarrier && et.size != 1) {
						continue
					}
					counts := elemCounts(et.size)
					if op == OpBarrier {
						counts = []int{0}
					}
					// 1 MiB on a few sizes, with one type and reduction
					// of each commutativity.
					if big[n] && op != OpBarrier && (op != OpAlltoall || n <= 8) && (et.size == 4 || !et.commute) {
						counts = append(counts, mib/et.size)
					}
					for _, cnt := range counts {
						for _, root := range rootList {
							if cnt == mib/et.size && root > 1 && root != n-1 {
								continue // 1 MiB: roots 0, 1 and the last
							}
							b := cnt * et.size
							if cnt == mib/et.size && (op == OpReduceScatterBlock || op == OpReduceScatter) {
								b = cnt / n * et.size
							}
							p := newProblem(op, n, root, b, et, uint64(cases))
							for _, alg := range algs {
								cases++
								err := p.check(alg)
								if errors.Is(err, ErrNotCommutative) {
									refused++
									if !alg.Commutative() || et.commute {
										t.Fatalf("%s %v: refused: %v", alg.Name(), p, err)
									}
									continue
								}
								if err != nil {
									t.Fatalf("%s %v: %v", alg.Name(), p, err)
								}
							}
						}
					}
				}
			}
			t.Logf("%s: %d cases, %d refused as non-commutative", op, cases, refused)
		})
	}
}
