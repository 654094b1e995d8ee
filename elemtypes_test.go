package commtune

import (
	"context"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// Element types run through every generic call: the typed calls move
// plain types of non-zero size and refuse the rest with an error before
// anything moves; the value calls take every type. No call may panic on a
// type the compiler accepts.

// elemRanks is the number of goroutine ranks each call runs on: three, so
// that rank order, roots other than 0 and uneven blocks all show.
const elemRanks = 3

// The starts of the errors of refused element types.
const (
	refusedZero  = "has size 0: elements of zero size cannot be counted"
	refusedPlain = "is not a plain type"
)

// Types of every shape the typed calls see.
type (
	elemMyInt     int32
	elemMyFloat   float64
	elemMyComplex complex64
	elemPadded    struct {
		a int8
		b int64
	}
	elemTailPadded struct {
		a float32
		b int8
	}
	elemZeroField  struct{ x [0]float64 }
	elemZeroNested struct {
		a struct{}
		b [2][0]int64
	}
	elemPointer struct{ P *int32 }
	elemString  struct {
		S string
		N int32
	}
)

// TestElemTypes runs every typed call (point to point, collective, their
// I-forms, the Number-only ones) and every value call over each element
// type, on goroutine ranks with rank- and element-specific values.
func TestElemTypes(t *testing.T) {
	zero, plain := refusedZero, refusedPlain
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		// Zero size: refused by the typed calls, moved by the value calls.
		{"struct{}", func(t *testing.T) { exercise(t, func(int) struct{} { return struct{}{} }, zero) }},
		{"[0]int", func(t *testing.T) { exercise(t, func(int) [0]int { return [0]int{} }, zero) }},
		{"struct{x [0]float64}", func(t *testing.T) { exercise(t, func(int) elemZeroField { return elemZeroField{} }, zero) }},
		{"[3]struct{}", func(t *testing.T) { exercise(t, func(int) [3]struct{} { return [3]struct{}{} }, zero) }},
		{"[2][0]int32", func(t *testing.T) { exercise(t, func(int) [2][0]int32 { return [2][0]int32{} }, zero) }},
		{"nested zero", func(t *testing.T) { exercise(t, func(int) elemZeroNested { return elemZeroNested{} }, zero) }},
		// Plain types of non-zero size, padding included.
		{"[2][3]int16", func(t *testing.T) {
			exercise(t, func(v int) (a [2][3]int16) {
				for i := range a {
					for j := range a[i] {
						a[i][j] = int16(v*10 + i*3 + j)
					}
				}
				return a
			}, "")
		}},
		{"struct{int8;int64}", func(t *testing.T) {
			exercise(t, func(v int) elemPadded { return elemPadded{a: int8(v), b: -int64(v) << 40} }, "")
		}},
		{"struct{float32;int8}", func(t *testing.T) {
			exercise(t, func(v int) elemTailPadded { return elemTailPadded{a: float32(v) / 4, b: int8(-v)} }, "")
		}},
		{"[1]struct{int8;int64}", func(t *testing.T) {
			exercise(t, func(v int) [1]elemPadded { return [1]elemPadded{{a: int8(v), b: int64(v)}} }, "")
		}},
		// Numbers, named ones included.
		{"int", func(t *testing.T) { exerciseNumber(t, func(v int) int { return v }) }},
		{"int8", func(t *testing.T) { exerciseNumber(t, func(v int) int8 { return int8(v) }) }},
		{"int16", func(t *testing.T) { exerciseNumber(t, func(v int) int16 { return int16(-v) }) }},
		{"int32", func(t *testing.T) { exerciseNumber(t, func(v int) int32 { return int32(v) << 20 }) }},
		{"int64", func(t *testing.T) { exerciseNumber(t, func(v int) int64 { return int64(v) << 40 }) }},
		{"uint", func(t *testing.T) { exerciseNumber(t, func(v int) uint { return uint(v) }) }},
		{"uint8", func(t *testing.T) { exerciseNumber(t, func(v int) uint8 { return uint8(v) }) }},
		{"uint16", func(t *testing.T) { exerciseNumber(t, func(v int) uint16 { return uint16(v) << 8 }) }},
		{"uint32", func(t *testing.T) { exerciseNumber(t, func(v int) uint32 { return uint32(v) << 24 }) }},
		{"uint64", func(t *testing.T) { exerciseNumber(t, func(v int) uint64 { return uint64(v) << 56 }) }},
		{"uintptr", func(t *testing.T) { exerciseNumber(t, func(v int) uintptr { return uintptr(v) }) }},
		{"float32", func(t *testing.T) { exerciseNumber(t, func(v int) float32 { return float32(v) / 8 }) }},
		{"float64", func(t *testing.T) { exerciseNumber(t, func(v int) float64 { return float64(v) / 1024 }) }},
		{"complex64", func(t *testing.T) {
			exerciseNumber(t, func(v int) complex64 { return complex(float32(v), -float32(v)) })
		}},
		{"complex128", func(t *testing.T) { exerciseNumber(t, func(v int) complex128 { return complex(float64(v), 0.5) }) }},
		{"~int32", func(t *testing.T) { exerciseNumber(t, func(v int) elemMyInt { return elemMyInt(v) }) }},
		{"~float64", func(t *testing.T) { exerciseNumber(t, func(v int) elemMyFloat { return elemMyFloat(v) }) }},
		{"~complex64", func(t *testing.T) {
			exerciseNumber(t, func(v int) elemMyComplex { return elemMyComplex(complex(0, float32(v))) })
		}},
		// Not plain: refused by the typed calls, encoded by the value calls.
		{"bool", func(t *testing.T) { exercise(t, func(v int) bool { return v%2 == 1 }, plain) }},
		{"struct{*int32}", func(t *testing.T) {
			exercise(t, func(v int) elemPointer { p := int32(v); return elemPointer{P: &p} }, plain)
		}},
		{"struct{string;int32}", func(t *testing.T) {
			exercise(t, func(v int) elemString { return elemString{S: fmt.Sprint("v", v), N: int32(v)} }, plain)
		}},
		{"[2]string", func(t *testing.T) { exercise(t, func(v int) [2]string { return [2]string{fmt.Sprint(v), "x"} }, plain) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// TestElemPlainCheck: the one check every typed call makes first.
func TestElemPlainCheck(t *testing.T) {
	tests := []struct {
		name    string
		check   func() error
		refused string
	}{
		{"int32", checkPlain[int32], ""},
		{"~int32", checkPlain[elemMyInt], ""},
		{"[2][3]int16", checkPlain[[2][3]int16], ""},
		{"padded", checkPlain[elemPadded], ""},
		{"[0]int and a number", checkPlain[struct {
			a [0]int
			b uint8
		}], ""},
		{"struct{}", checkPlain[struct{}], refusedZero},
		{"[0]int", checkPlain[[0]int], refusedZero},
		{"[0]float64 field", checkPlain[elemZeroField], refusedZero},
		{"[4]struct{}", checkPlain[[4]struct{}], refusedZero},
		{"nested", checkPlain[[3]elemZeroNested], refusedZero},
		{"bool", checkPlain[bool], refusedPlain},
		{"pointer", checkPlain[elemPointer], refusedPlain},
		{"string", checkPlain[elemString], refusedPlain},
		{"[0]string", checkPlain[[0]string], refusedPlain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check()
			if tt.refused == "" && err != nil || tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused)) {
				t.Fatalf("checkPlain: %v, want %q", err, tt.refused)
			}
		})
	}
}

// TestElemCount: Count divides by the element size, except for a type of
// size 0, which counts 0.
func TestElemCount(t *testing.T) {
	tests := []struct {
		name  string
		count func(Status) int
		bytes int
		want  int
	}{
		{"int32", Count[int32], 12, 3},
		{"[2][3]int16", Count[[2][3]int16], 36, 3},
		{"padded", Count[elemPadded], 32, 2},
		{"part of one", Count[int64], 7, 0},
		{"struct{}", Count[struct{}], 8, 0},
		{"[0]int", Count[[0]int], 0, 0},
		{"[3]struct{}", Count[[3]struct{}], 5, 0},
	}
	for _, tt := range tests {
		if got := tt.count(Status{Count: tt.bytes}); got != tt.want {
			t.Errorf("%s: Count of %d bytes = %d, want %d", tt.name, tt.bytes, got, tt.want)
		}
	}
}

// elemCall is one call (with its partners' calls) as every rank makes it:
// it returns the call's error, or one saying what arrived wrong.
type elemCall struct {
	name string
	run  func(ctx context.Context, c *Comm) error
}

// runElemCalls runs each call on elemRanks goroutine ranks, as a subtest.
// With refused == "" every rank's call must succeed; otherwise every
// rank's must fail with an error containing refused. A panic in a rank is
// recovered and fails the test.
func runElemCalls(t *testing.T, calls []elemCall, refused string) {
	t.Helper()
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			err := Local(elemRanks, func(c *Comm) (err error) {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
					}
				}()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				err = call.run(ctx, c)
				switch {
				case refused == "" && err != nil:
					return err
				case refused != "" && err == nil:
					return fmt.Errorf("accepted, want an error containing %q", refused)
				case refused != "" && !strings.Contains(err.Error(), refused):
					return fmt.Errorf("error %q, want one containing %q", err, refused)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// elemVals makes the values of an exercise: val(r, i) is rank r's i-th
// element, distinct for every rank and element of the calls below (i <
// 16), and fill(r, k) rank r's first k.
type elemVals[T any] struct{ mk func(v int) T }

func (e elemVals[T]) val(rank, i int) T { return e.mk(1 + rank*16 + i) }

func (e elemVals[T]) fill(rank, k int) []T {
	s := make([]T, k)
	for i := range s {
		s[i] = e.val(rank, i)
	}
	return s
}

// junk returns k elements no rank sends: a receive buffer's contents
// before the call, so that an element the call left alone shows.
func (e elemVals[T]) junk(k int) []T { return e.fill(9, k) }

// sameAs returns an error naming the first element of got that is not
// want(i).
func sameAs[T any](what string, got []T, want func(i int) T) error {
	for i := range got {
		if w := want(i); !reflect.DeepEqual(got[i], w) {
			return fmt.Errorf("%s: element %d is %v, want %v", what, i, got[i], w)
		}
	}
	return nil
}

// wait waits for a started collective.
func wait(ctx context.Context) func(*CollRequest, error) error {
	return func(q *CollRequest, err error) error {
		if err != nil {
			return err
		}
		return q.Wait(ctx)
	}
}

// The block layouts of the v-calls on elemRanks ranks: uneven counts, and
// displacements out of rank order.
var (
	elemCounts = []int{1, 2, 3}
	elemDispls = []int{5, 0, 2}
)

// exercise runs every call that takes any element type over T: the typed
// ones move T intact, or refuse it with an error containing refused; the
// value calls move any T.
func exercise[T any](t *testing.T, mk func(v int) T, refused string) {
	t.Helper()
	t.Run("typed", func(t *testing.T) { runElemCalls(t, typedCalls(elemVals[T]{mk}), refused) })
	t.Run("value", func(t *testing.T) { runElemCalls(t, valueCalls(elemVals[T]{mk}), "") })
}

// exerciseNumber runs exercise and the calls for Number types only.
func exerciseNumber[T Number](t *testing.T, mk func(v int) T) {
	t.Helper()
	exercise(t, mk, "")
	t.Run("number", func(t *testing.T) { runElemCalls(t, numberCalls(elemVals[T]{mk}), "") })
}

// typedCalls returns every typed call generic over any element type.
func typedCalls[T any](e elemVals[T]) []elemCall {
	const n, k = elemRanks, 2
	// last keeps the higher ranks' operand: in rank order the result is
	// the last rank's; first keeps rank 0's. Neither commutes.
	last := NewOp("last", func(a, b T) T { return b }, false)
	first := NewOp("first", func(a, b T) T { return a }, false)
	left := func(c *Comm) int { return (c.Rank() + n - 1) % n }
	right := func(c *Comm) int { return (c.Rank() + 1) % n }
	// received checks a ring's receive from the left neighbour.
	received := func(c *Comm, got []T, st Status) error {
		if got := Count[T](st); got != k {
			return fmt.Errorf("Count: %d elements, want %d", got, k)
		}
		return sameAs("from the left", got, func(i int) T { return e.val(left(c), i) })
	}
	// reduced checks a call's result on this rank.
	reduced := func(what string, c *Comm, recv []T, want func(i int) T) error {
		return sameAs(fmt.Sprintf("%s on rank %d", what, c.Rank()), recv, want)
	}
	offset := func(counts []int, r int) (o int) {
		for _, k := range counts[:r] {
			o += k
		}
		return o
	}

	bcast := func(ctx context.Context, c *Comm, i bool) error {
		buf := e.junk(k)
		if c.Rank() == 1 {
			buf = e.fill(1, k)
		}
		var err error
		if i {
			err = wait(ctx)(Ibcast(ctx, c, buf, 1))
		} else {
			err = Bcast(ctx, c, buf, 1)
		}
		if err != nil {
			return err
		}
		return reduced("bcast", c, buf, func(i int) T { return e.val(1, i) })
	}
	reduce := func(ctx context.Context, c *Comm, i bool) error {
		recv := e.junk(k)
		var err error
		if i {
			err = wait(ctx)(Ireduce(ctx, c, e.fill(c.Rank(), k), recv, last, 0))
		} else {
			err = Reduce(ctx, c, e.fill(c.Rank(), k), recv, last, 0)
		}
		if err != nil || c.Rank() != 0 {
			return err
		}
		return reduced("reduce", c, recv, func(i int) T { return e.val(n-1, i) })
	}
	allreduce := func(ctx context.Context, c *Comm, i bool) error {
		recv := e.junk(k)
		var err error
		if i {
			err = wait(ctx)(Iallreduce(ctx, c, e.fill(c.Rank(), k), recv, last))
		} else {
			err = Allreduce(ctx, c, e.fill(c.Rank(), k), recv, last)
		}
		if err != nil {
			return err
		}
		return reduced("allreduce", c, recv, func(i int) T { return e.val(n-1, i) })
	}
	reduceScatterBlock := func(ctx context.Context, c *Comm, i bool) error {
		recv := e.junk(k)
		var err error
		if i {
			err = wait(ctx)(IreduceScatterBlock(ctx, c, e.fill(c.Rank(), n*k), recv, last))
		} else {
			err = ReduceScatterBlock(ctx, c, e.fill(c.Rank(), n*k), recv, last)
		}
		if err != nil {
			return err
		}
		return reduced("reducescatterblock", c, recv, func(i int) T { return e.val(n-1, c.Rank()*k+i) })
	}
	reduceScatter := func(ctx context.Context, c *Comm, i bool) error {
		recv := e.junk(elemCounts[c.Rank()])
		send := e.fill(c.Rank(), offset(elemCounts, n))
		var err error
		if i {
			err = wait(ctx)(IreduceScatter(ctx, c, send, recv, elemCounts, last))
		} else {
			err = ReduceScatter(ctx, c, send, recv, elemCounts, last)
		}
		if err != nil {
			return err
		}
		o := offset(elemCounts, c.Rank())
		return reduced("reducescatter", c, recv, func(i int) T { return e.val(n-1, o+i) })
	}
	scan := func(ctx context.Context, c *Comm, i bool) error {
		recv := e.junk(k)
		var err error
		if i {
			err = wait(ctx)(Iscan(ctx, c, e.fill(c.Rank(), k), recv, first))
		} else {
			err = Scan(ctx, c, e.fill(c.Rank(), k), recv, first)
		}
		if err != nil {
			return err
		}
		return reduced("scan", c, recv, func(i int) T { return e.val(0, i) })
	}
	exscan := func(ctx context.Context, c *Comm, i bool) error {
		recv := e.junk(k)
		var err error
		if i {
			err = wait(ctx)(Iexscan(ctx, c, e.fill(c.Rank(), k), recv, last))
		} else {
			err = Exscan(ctx, c, e.fill(c.Rank(), k), recv, last)
		}
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			return reduced("exscan (untouched)", c, recv, func(i int) T { return e.val(9, i) })
		}
		return reduced("exscan", c, recv, func(i int) T { return e.val(c.Rank()-1, i) })
	}
	scatter := func(ctx context.Context, c *Comm, i bool) error {
		var send []T
		if c.Rank() == 2 {
			send = e.fill(2, n*k)
		}
		recv := e.junk(k)
		var err error
		if i {
			err = wait(ctx)(Iscatter(ctx, c, send, recv, 2))
		} else {
			err = Scatter(ctx, c, send, recv, 2)
		}
		if err != nil {
			return err
		}
		return reduced("scatter", c, recv, func(i int) T { return e.val(2, c.Rank()*k+i) })
	}
	gather := func(ctx context.Context, c *Comm, i bool) error {
		var recv []T
		if c.Rank() == 0 {
			recv = e.junk(n * k)
		}
		var err error
		if i {
			err = wait(ctx)(Igather(ctx, c, e.fill(c.Rank(), k), recv, 0))
		} else {
			err = Gather(ctx, c, e.fill(c.Rank(), k), recv, 0)
		}
		if err != nil {
			return err
		}
		return reduced("gather", c, recv, func(i int) T { return e.val(i/k, i%k) })
	}
	allgather := func(ctx context.Context, c *Comm, i bool) error {
		recv := e.junk(n * k)
		var err error
		if i {
			err = wait(ctx)(Iallgather(ctx, c, e.fill(c.Rank(), k), recv))
		} else {
			err = Allgather(ctx, c, e.fill(c.Rank(), k), recv)
		}
		if err != nil {
			return err
		}
		return reduced("allgather", c, recv, func(i int) T { return e.val(i/k, i%k) })
	}
	alltoall := func(ctx context.Context, c *Comm, i bool) error {
		recv := e.junk(n * k)
		var err error
		if i {
			err = wait(ctx)(Ialltoall(ctx, c, e.fill(c.Rank(), n*k), recv))
		} else {
			err = Alltoall(ctx, c, e.fill(c.Rank(), n*k), recv)
		}
		if err != nil {
			return err
		}
		// Block s came from rank s, its block for this rank.
		return reduced("alltoall", c, recv, func(i int) T { return e.val(i/k, c.Rank()*k+i%k) })
	}
	// The v-calls' buffers: elemCounts[r] elements at elemDispls[r].
	total := offset(elemCounts, n)
	atDispl := func(i int) (r, j int) {
		for r := range elemCounts {
			if i >= elemDispls[r] && i < elemDispls[r]+elemCounts[r] {
				return r, i - elemDispls[r]
			}
		}
		panic("no block holds element " + fmt.Sprint(i))
	}
	scatterv := func(ctx context.Context, c *Comm, i bool) error {
		var send []T
		if c.Rank() == 1 {
			send = e.fill(1, total)
		}
		recv := e.junk(elemCounts[c.Rank()])
		var err error
		if i {
			err = wait(ctx)(Iscatterv(ctx, c, send, elemCounts, elemDispls, recv, 1))
		} else {
			err = Scatterv(ctx, c, send, elemCounts, elemDispls, recv, 1)
		}
		if err != nil {
			return err
		}
		return reduced("scatterv", c, recv, func(i int) T { return e.val(1, elemDispls[c.Rank()]+i) })
	}
	gatherv := func(ctx context.Context, c *Comm, i bool) error {
		var recv []T
		if c.Rank() == 0 {
			recv = e.junk(total)
		}
		send := e.fill(c.Rank(), elemCounts[c.Rank()])
		var err error
		if i {
			err = wait(ctx)(Igatherv(ctx, c, send, recv, elemCounts, elemDispls, 0))
		} else {
			err = Gatherv(ctx, c, send, recv, elemCounts, elemDispls, 0)
		}
		if err != nil {
			return err
		}
		return reduced("gatherv", c, recv, func(i int) T { return e.val(atDispl(i)) })
	}
	allgatherv := func(ctx context.Context, c *Comm, i bool) error {
		recv := e.junk(total)
		send := e.fill(c.Rank(), elemCounts[c.Rank()])
		var err error
		if i {
			err = wait(ctx)(Iallgatherv(ctx, c, send, recv, elemCounts, elemDispls))
		} else {
			err = Allgatherv(ctx, c, send, recv, elemCounts, elemDispls)
		}
		if err != nil {
			return err
		}
		return reduced("allgatherv", c, recv, func(i int) T { return e.val(atDispl(i)) })
	}
	// Alltoallv: rank s sends rank d 1+(s+d)%2 elements, packed in rank
	// order, received packed in rank order.
	vcount := func(s, d int) int { return 1 + (s+d)%2 }
	vblocks := func(k func(r int) int) (counts, displs []int, total int) {
		for r := 0; r < n; r++ {
			counts, displs = append(counts, k(r)), append(displs, total)
			total += k(r)
		}
		return counts, displs, total
	}
	alltoallv := func(ctx context.Context, c *Comm, i bool) error {
		me := c.Rank()
		sc, sd, st := vblocks(func(d int) int { return vcount(me, d) })
		rc, rd, rt := vblocks(func(s int) int { return vcount(s, me) })
		recv := e.junk(rt)
		var err error
		if i {
			err = wait(ctx)(Ialltoallv(ctx, c, e.fill(me, st), sc, sd, recv, rc, rd))
		} else {
			err = Alltoallv(ctx, c, e.fill(me, st), sc, sd, recv, rc, rd)
		}
		if err != nil {
			return err
		}
		return reduced("alltoallv", c, recv, func(i int) T {
			s := 0
			for i >= rd[s]+rc[s] {
				s++
			}
			_, theirs, _ := vblocks(func(d int) int { return vcount(s, d) })
			return e.val(s, theirs[me]+i-rd[s])
		})
	}

	calls := []elemCall{
		{"SendSlice+RecvSlice", func(ctx context.Context, c *Comm) error {
			// 0 → 1 → 2 → 0, each rank receiving before it sends but rank 0.
			got := e.junk(k)
			if c.Rank() == 0 {
				if err := SendSlice(ctx, c, e.fill(0, k), right(c), 0); err != nil {
					return err
				}
			}
			st, err := RecvSlice(ctx, c, got, left(c), 0)
			if err != nil {
				return err
			}
			if c.Rank() != 0 {
				if err := SendSlice(ctx, c, e.fill(c.Rank(), k), right(c), 0); err != nil {
					return err
				}
			}
			return received(c, got, st)
		}},
		{"IsendSlice+IrecvSlice", func(ctx context.Context, c *Comm) error {
			// Rank 0 starts with the send, the others with the receive.
			got := e.junk(k)
			var s, r *Request
			var err error
			if c.Rank() == 0 {
				if s, err = IsendSlice(c, e.fill(0, k), right(c), 1); err != nil {
					return err
				}
			}
			if r, err = IrecvSlice(c, got, left(c), 1); err != nil {
				return err
			}
			if c.Rank() != 0 {
				if s, err = IsendSlice(c, e.fill(c.Rank(), k), right(c), 1); err != nil {
					return err
				}
			}
			if _, err := s.Wait(ctx); err != nil {
				return err
			}
			st, err := r.Wait(ctx)
			if err != nil {
				return err
			}
			return received(c, got, st)
		}},
	}
	for _, f := range []struct {
		name string
		run  func(ctx context.Context, c *Comm, i bool) error
	}{
		{"Bcast", bcast}, {"Reduce", reduce}, {"Allreduce", allreduce},
		{"ReduceScatterBlock", reduceScatterBlock}, {"ReduceScatter", reduceScatter},
		{"Scan", scan}, {"Exscan", exscan}, {"Scatter", scatter}, {"Gather", gather},
		{"Allgather", allgather}, {"Alltoall", alltoall}, {"Scatterv", scatterv},
		{"Gatherv", gatherv}, {"Allgatherv", allgatherv}, {"Alltoallv", alltoallv},
	} {
		calls = append(calls,
			elemCall{f.name, func(ctx context.Context, c *Comm) error { return f.run(ctx, c, false) }},
			elemCall{"I" + strings.ToLower(f.name[:1]) + f.name[1:], func(ctx context.Context, c *Comm) error { return f.run(ctx, c, true) }})
	}
	return calls
}

// numberCalls returns the calls for Number types only: the predefined
// operations, Bytes, the neighbourhood collectives, NewHalo and
// SharedPart.
func numberCalls[T Number](e elemVals[T]) []elemCall {
	const n, k = elemRanks, 2
	// sum is what Sum gives over ranks lo … hi−1 for element i.
	sum := func(lo, hi, i int) T {
		var s T
		for r := lo; r < hi; r++ {
			s += e.val(r, i)
		}
		return s
	}
	// ring is the periodic 1-D Cart of the ranks; its neighbours are −1
	// (source and destination 0) and +1 (1).
	ring := func(c *Comm) (*Cart, int, int, error) {
		cart, err := c.Cart([]int{n}, []bool{true})
		if err != nil {
			return nil, 0, 0, err
		}
		return cart, (c.Rank() + n - 1) % n, (c.Rank() + 1) % n, nil
	}
	return []elemCall{
		{"Bytes", func(ctx context.Context, c *Comm) error {
			s := e.fill(c.Rank(), k)
			if b := Bytes(s); len(b) != k*int(unsafe.Sizeof(s[0])) || unsafe.Pointer(&b[0]) != unsafe.Pointer(&s[0]) {
				return fmt.Errorf("Bytes: %d bytes at %p for %d elements at %p", len(b), &b[0], k, &s[0])
			}
			return nil
		}},
		{"Allreduce/Sum", func(ctx context.Context, c *Comm) error {
			recv := e.junk(k)
			if err := Allreduce(ctx, c, e.fill(c.Rank(), k), recv, Sum); err != nil {
				return err
			}
			return sameAs("sum", recv, func(i int) T { return sum(0, n, i) })
		}},
		{"Scan/Sum", func(ctx context.Context, c *Comm) error {
			recv := e.junk(k)
			if err := Scan(ctx, c, e.fill(c.Rank(), k), recv, Sum); err != nil {
				return err
			}
			return sameAs("prefix sum", recv, func(i int) T { return sum(0, c.Rank()+1, i) })
		}},
		{"NeighborAllgather", func(ctx context.Context, c *Comm) error {
			cart, lo, hi, err := ring(c)
			if err != nil {
				return err
			}
			recv := e.junk(2 * k)
			if err := NeighborAllgather(ctx, cart.Neighborhood(), e.fill(c.Rank(), k), recv); err != nil {
				return err
			}
			return sameAs("neighbour allgather", recv, func(i int) T { return e.val([]int{lo, hi}[i/k], i%k) })
		}},
		{"IneighborAllgatherv", func(ctx context.Context, c *Comm) error {
			cart, lo, hi, err := ring(c)
			if err != nil {
				return err
			}
			recv := e.junk(2*k + 1)
			q, err := IneighborAllgatherv(cart.Neighborhood(), e.fill(c.Rank(), k), recv, []int{k, k}, []int{k + 1, 0})
			if err == nil {
				err = q.Wait(ctx)
			}
			if err != nil {
				return err
			}
			// The +1 neighbour's block first, a gap, then the −1 one's.
			want := append(append(e.fill(hi, k), e.val(9, k)), e.fill(lo, k)...)
			return sameAs("neighbour allgatherv", recv, func(i int) T { return want[i] })
		}},
		{"NeighborAlltoall", func(ctx context.Context, c *Comm) error {
			cart, lo, hi, err := ring(c)
			if err != nil {
				return err
			}
			recv := e.junk(2 * k)
			if err := NeighborAlltoall(ctx, cart.Neighborhood(), e.fill(c.Rank(), 2*k), recv); err != nil {
				return err
			}
			// From −1 what it sent toward +1 (its block 1), and back.
			want := append(e.fill(lo, 2*k)[k:], e.fill(hi, k)...)
			return sameAs("neighbour alltoall", recv, func(i int) T { return want[i] })
		}},
		{"IneighborAlltoallv", func(ctx context.Context, c *Comm) error {
			cart, lo, hi, err := ring(c)
			if err != nil {
				return err
			}
			// One element toward −1 (element 2), two toward +1 (0 and 1).
			recv := e.junk(3)
			q, err := IneighborAlltoallv(cart.Neighborhood(), e.fill(c.Rank(), 3), []int{1, 2}, []int{2, 0}, recv, []int{2, 1}, []int{0, 2})
			if err == nil {
				err = q.Wait(ctx)
			}
			if err != nil {
				return err
			}
			want := []T{e.val(lo, 0), e.val(lo, 1), e.val(hi, 2)}
			return sameAs("neighbour alltoallv", recv, func(i int) T { return want[i] })
		}},
		{"NewHalo", func(ctx context.Context, c *Comm) error {
			cart, lo, hi, err := ring(c)
			if err != nil {
				return err
			}
			// Four interior cells framed by a halo of one.
			data := append(append(e.junk(1), e.fill(c.Rank(), 5)[1:]...), e.junk(1)...)
			h, err := NewHalo(cart, data, []int{4}, 1, 1)
			if err != nil {
				return err
			}
			if err := h.Exchange(ctx); err != nil {
				return err
			}
			want := append(append([]T{e.val(lo, 4)}, e.fill(c.Rank(), 5)[1:]...), e.val(hi, 1))
			return sameAs("halo", data, func(i int) T { return want[i] })
		}},
		{"SharedPart", func(ctx context.Context, c *Comm) error {
			node, err := c.SplitShared(ctx)
			if err != nil {
				return err
			}
			var x T
			reg, err := node.AllocShared(ctx, k*int(unsafe.Sizeof(x)))
			if err != nil {
				return err
			}
			defer reg.Close()
			copy(SharedPart[T](reg, node.Rank()), e.fill(node.Rank(), k))
			if err := node.Barrier(ctx); err != nil {
				return err
			}
			peer := (node.Rank() + 1) % node.Size()
			part := SharedPart[T](reg, peer)
			if len(part) != k {
				return fmt.Errorf("shared part of %d elements, want %d", len(part), k)
			}
			if err := sameAs("shared part", part, func(i int) T { return e.val(peer, i) }); err != nil {
				return err
			}
			return node.Barrier(ctx) // no rank unmaps before every rank has read
		}},
	}
}

// valueCalls returns every value call over T and []T.
func valueCalls[T any](e elemVals[T]) []elemCall {
	const n = elemRanks
	equal := func(what string, got, want any) error {
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("%s: %v, want %v", what, got, want)
		}
		return nil
	}
	// ring sends v(me) to the right and receives the left's, 0 first.
	ring := func(ctx context.Context, c *Comm, send func(dest int) error, recv func(src int) error) error {
		me := c.Rank()
		right, left := (me+1)%n, (me+n-1)%n
		if me == 0 {
			if err := send(right); err != nil {
				return err
			}
		}
		if err := recv(left); err != nil {
			return err
		}
		if me != 0 {
			return send(right)
		}
		return nil
	}
	return []elemCall{
		{"SendValue+RecvValue", func(ctx context.Context, c *Comm) error {
			return ring(ctx, c,
				func(dest int) error { return SendValue(ctx, c, e.val(c.Rank(), 0), dest, 2) },
				func(src int) error {
					v, _, err := RecvValue[T](ctx, c, src, 2)
					if err != nil {
						return err
					}
					return equal("value", v, e.val(src, 0))
				})
		}},
		{"SendValue+RecvValue/slice", func(ctx context.Context, c *Comm) error {
			return ring(ctx, c,
				func(dest int) error { return SendValue(ctx, c, e.fill(c.Rank(), 3+c.Rank()), dest, 3) },
				func(src int) error {
					v, _, err := RecvValue[[]T](ctx, c, src, 3)
					if err != nil {
						return err
					}
					return equal("slice value", v, e.fill(src, 3+src))
				})
		}},
		{"BcastValue/slice", func(ctx context.Context, c *Comm) error {
			var v []T
			if c.Rank() == 1 {
				v = e.fill(1, 4)
			}
			got, err := BcastValue(ctx, c, v, 1)
			if err != nil {
				return err
			}
			return equal("bcast value", got, e.fill(1, 4))
		}},
		{"GatherValues", func(ctx context.Context, c *Comm) error {
			got, err := GatherValues(ctx, c, e.val(c.Rank(), 5), 0)
			if err != nil || c.Rank() != 0 {
				return err
			}
			return equal("gathered values", got, []T{e.val(0, 5), e.val(1, 5), e.val(2, 5)})
		}},
		{"AllgatherValues/slice", func(ctx context.Context, c *Comm) error {
			got, err := AllgatherValues(ctx, c, e.fill(c.Rank(), 1+c.Rank()))
			if err != nil {
				return err
			}
			return equal("allgathered values", got, [][]T{e.fill(0, 1), e.fill(1, 2), e.fill(2, 3)})
		}},
		{"ScatterValues", func(ctx context.Context, c *Comm) error {
			var vs []T
			if c.Rank() == 2 {
				vs = e.fill(2, n)
			}
			got, err := ScatterValues(ctx, c, vs, 2)
			if err != nil {
				return err
			}
			return equal("scattered value", got, e.val(2, c.Rank()))
		}},
		{"AlltoallValues/slice", func(ctx context.Context, c *Comm) error {
			me := c.Rank()
			vs := make([][]T, n)
			for d := range vs {
				vs[d] = e.fill(me, 1+d)[d:] // one element, rank d's
			}
			got, err := AlltoallValues(ctx, c, vs)
			if err != nil {
				return err
			}
			return equal("all-to-all values", got, [][]T{{e.val(0, me)}, {e.val(1, me)}, {e.val(2, me)}})
		}},
		{"ReduceValue", func(ctx context.Context, c *Comm) error {
			got, err := ReduceValue(ctx, c, e.val(c.Rank(), 6), func(a, b T) T { return b }, 0)
			if err != nil || c.Rank() != 0 {
				return err
			}
			return equal("reduced value", got, e.val(n-1, 6))
		}},
	}
}
