package commtune

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/coll"
)

// pairOp is a non-commutative operation on int64: the decimal digits of a
// then those of b, each value being a string of rank digits (rank+1).
var pairOp = NewOp("concat", func(a, b int64) int64 {
	m := int64(1)
	for x := b; x > 0; x /= 10 {
		m *= 10
	}
	return a*m + b
}, false)

// digits is the value pairOp gives the ranks from … to, in order, rank r
// being the digit r+1.
func digits(from, to int) int64 {
	var v int64
	for r := from; r <= to; r++ {
		v = v*10 + int64(r+1)
	}
	return v
}

// TestReduceScatterAndScan runs the new reductions through the public
// API, with every algorithm, a sum and a non-commutative operation
// checked against the rank order, on 1 to 6 ranks.
func TestReduceScatterAndScan(t *testing.T) {
	for n := 1; n <= 6; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			err := Local(n, func(c *Comm) error {
				ctx := context.Background()
				me := c.Rank()
				// ReduceScatterBlock: 3 elements each; element j of rank r
				// is j*10 + r for the sum, r's digit for pairOp.
				const k = 3
				for _, a := range coll.Algorithms(coll.OpReduceScatterBlock) {
					opt := WithAlgorithm(a.Name())
					send, cat := make([]int64, n*k), make([]int64, n*k)
					for j := range send {
						send[j], cat[j] = int64(j*10+me), int64(me+1)
					}
					got := make([]int64, k)
					if err := ReduceScatterBlock(ctx, c, send, got, Sum, opt); err != nil {
						return fmt.Errorf("%s: %w", a.Name(), err)
					}
					for j := range got {
						if want := int64(n*(me*k+j)*10 + n*(n-1)/2); got[j] != want {
							return fmt.Errorf("%s: rank %d element %d = %d, want %d", a.Name(), me, j, got[j], want)
						}
					}
					err := ReduceScatterBlock(ctx, c, cat, got, pairOp, opt)
					if a.Commutative() {
						if !errors.Is(err, ErrNotCommutative) {
							return fmt.Errorf("%s with a non-commutative operation: %v", a.Name(), err)
						}
						continue
					}
					if err != nil {
						return fmt.Errorf("%s: %w", a.Name(), err)
					}
					for j := range got {
						if want := digits(0, n-1); got[j] != want {
							return fmt.Errorf("%s: rank %d element %d = %d, want %d", a.Name(), me, j, got[j], want)
						}
					}
				}
				// ReduceScatter: rank r gets r%3 elements (some none).
				counts := make([]int, n)
				total := 0
				for r := range counts {
					counts[r] = r % 3
					total += counts[r]
				}
				for _, a := range coll.Algorithms(coll.OpReduceScatter) {
					send := make([]int64, total)
					for j := range send {
						send[j] = int64(j*100 + me)
					}
					got := make([]int64, counts[me])
					if err := ReduceScatter(ctx, c, send, got, counts, Sum, WithAlgorithm(a.Name())); err != nil {
						return fmt.Errorf("%s: %w", a.Name(), err)
					}
					at := 0
					for r := 0; r < me; r++ {
						at += counts[r]
					}
					for j := range got {
						if want := int64(n*(at+j)*100 + n*(n-1)/2); got[j] != want {
							return fmt.Errorf("%s: rank %d element %d = %d, want %d", a.Name(), me, j, got[j], want)
						}
					}
				}
				// Scan and Exscan, with the sum and in rank order; Exscan
				// leaves rank 0's buffer alone.
				for _, op := range []coll.Operation{coll.OpScan, coll.OpExscan} {
					for _, a := range coll.Algorithms(op) {
						opt := WithAlgorithm(a.Name())
						send := []int64{int64(me + 1), int64(me+1) * 10}
						got := []int64{-1, -1}
						cat := []int64{int64(me + 1), int64(me + 1)}
						gotCat := []int64{-1, -1}
						var err error
						if op == coll.OpScan {
							err = errors.Join(Scan(ctx, c, send, got, Sum, opt), Scan(ctx, c, cat, gotCat, pairOp, opt))
						} else {
							err = errors.Join(Exscan(ctx, c, send, got, Sum, opt), Exscan(ctx, c, cat, gotCat, pairOp, opt))
						}
						if err != nil {
							return fmt.Errorf("%s: %w", a.Name(), err)
						}
						last := me
						if op == coll.OpExscan {
							last = me - 1
						}
						want, wantCat := []int64{-1, -1}, []int64{-1, -1}
						if last >= 0 {
							s := int64((last + 1) * (last + 2) / 2)
							want = []int64{s, 10 * s}
							wantCat = []int64{digits(0, last), digits(0, last)}
						}
						if !slices.Equal(got, want) || !slices.Equal(gotCat, wantCat) {
							return fmt.Errorf("%s: rank %d has %v and %v, want %v and %v", a.Name(), me, got, gotCat, want, wantCat)
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReduceScatterAndScanInPlace: Scan and Exscan with the same slice as
// send and receive buffer, and ReduceScatterBlock into this rank's block
// of its send buffer; the table's algorithm and every other.
func TestReduceScatterAndScanInPlace(t *testing.T) {
	const n = 4
	err := Local(n, func(c *Comm) error {
		ctx := context.Background()
		me := c.Rank()
		for _, op := range []coll.Operation{coll.OpScan, coll.OpExscan, coll.OpReduceScatterBlock} {
			for _, name := range append([]string{""}, names(coll.Algorithms(op))...) {
				var opts []CollOption
				if name != "" {
					opts = append(opts, WithAlgorithm(name))
				}
				switch op {
				case coll.OpScan, coll.OpExscan:
					v := []int32{int32(me + 1), 5}
					want := []int32{int32((me + 1) * (me + 2) / 2), int32(5 * (me + 1))}
					var err error
					if op == coll.OpScan {
						err = Scan(ctx, c, v, v, Sum, opts...)
					} else {
						want = []int32{int32(me * (me + 1) / 2), int32(5 * me)}
						if me == 0 {
							want = []int32{1, 5} // left as it was
						}
						err = Exscan(ctx, c, v, v, Sum, opts...)
					}
					if err != nil {
						return fmt.Errorf("%s %q: %w", op, name, err)
					}
					if !slices.Equal(v, want) {
						return fmt.Errorf("%s %q in place: rank %d has %v, want %v", op, name, me, v, want)
					}
				default:
					v := make([]float64, 2*n)
					for j := range v {
						v[j] = float64(j + me)
					}
					mine := v[2*me : 2*me+2]
					if err := ReduceScatterBlock(ctx, c, v, mine, Sum, opts...); err != nil {
						return fmt.Errorf("%s %q: %w", op, name, err)
					}
					if want := []float64{float64(n*2*me + 6), float64(n*(2*me+1) + 6)}; !slices.Equal(mine, want) {
						return fmt.Errorf("%s %q in place: rank %d has %v, want %v", op, name, me, mine, want)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func names(as []coll.Algorithm) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Name()
	}
	return out
}

// TestReduceScatterAndScanNonblocking keeps one call of each in flight and
// waits for them in reverse order.
func TestReduceScatterAndScanNonblocking(t *testing.T) {
	const n = 3
	err := Local(n, func(c *Comm) error {
		ctx := context.Background()
		me := c.Rank()
		send := []int64{1, 2, 3, 4, 5, 6}
		blk, rs := make([]int64, 2), make([]int64, []int{1, 0, 5}[me])
		scan, ex := make([]int64, 6), make([]int64, 6)
		var reqs []*CollRequest
		for _, start := range []func() (*CollRequest, error){
			func() (*CollRequest, error) { return IreduceScatterBlock(ctx, c, send, blk, Sum) },
			func() (*CollRequest, error) { return IreduceScatter(ctx, c, send, rs, []int{1, 0, 5}, Sum) },
			func() (*CollRequest, error) { return Iscan(ctx, c, send, scan, Sum) },
			func() (*CollRequest, error) { return Iexscan(ctx, c, send, ex, Sum) },
		} {
			q, err := start()
			if err != nil {
				return err
			}
			reqs = append(reqs, q)
		}
		for i := len(reqs) - 1; i >= 0; i-- {
			if err := reqs[i].Wait(ctx); err != nil {
				return err
			}
		}
		times := func(s []int64, k int64) []int64 {
			out := make([]int64, len(s))
			for i := range s {
				out[i] = s[i] * k
			}
			return out
		}
		if want := times(send[2*me:2*me+2], n); !slices.Equal(blk, want) {
			return fmt.Errorf("ireducescatterblock: rank %d has %v, want %v", me, blk, want)
		}
		if want := times(send[[]int{0, 1, 1}[me]:][:len(rs)], n); !slices.Equal(rs, want) {
			return fmt.Errorf("ireducescatter: rank %d has %v, want %v", me, rs, want)
		}
		if want := times(send, int64(me+1)); !slices.Equal(scan, want) {
			return fmt.Errorf("iscan: rank %d has %v, want %v", me, scan, want)
		}
		if want := times(send, int64(me)); !slices.Equal(ex, want) {
			return fmt.Errorf("iexscan: rank %d has %v, want %v", me, ex, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReduceScatterAndScanErrors: bad arguments are refused before
// anything is sent, with errors that say what is wrong; forcing a
// reordering algorithm on a non-commutative operation is refused, and the
// table never picks one for it.
func TestReduceScatterAndScanErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		call func(c *Comm) error
		want string
	}{
		{"block size", func(c *Comm) error { return ReduceScatterBlock(ctx, c, []int{1, 2, 3}, []int{0}, Sum) }, "3 elements to send, want 2 ranks × 1"},
		{"counts per rank", func(c *Comm) error { return ReduceScatter(ctx, c, []int{1}, []int{0}, []int{1}, Sum) }, "1 counts for 2 ranks"},
		{"negative count", func(c *Comm) error { return ReduceScatter(ctx, c, []int{1}, []int{0}, []int{-1, 2}, Sum) }, "rank 0's block (-1 elements at 0) lies outside the send buffer of 1"},
		{"counts beyond send", func(c *Comm) error {
			return ReduceScatter(ctx, c, []int{1, 2}, make([]int, 1+c.Rank()), []int{1, 2}, Sum)
		}, "rank 1's block (2 elements at 1) lies outside the send buffer of 2"},
		{"counts short of send", func(c *Comm) error {
			return ReduceScatter(ctx, c, []int{1, 2, 3}, make([]int, 1), []int{1, 1}, Sum)
		}, "the counts add up to 2 elements, the send buffer holds 3"},
		{"recv for count", func(c *Comm) error { return ReduceScatter(ctx, c, []int{1, 2}, []int{0, 0}, []int{1, 1}, Sum) }, "this rank's count is 1, its receive buffer 2 elements"},
		{"scan recv", func(c *Comm) error { return Scan(ctx, c, []int{1, 2}, []int{0}, Sum) }, "scan: receive buffer of 1 elements for 2"},
		{"exscan recv", func(c *Comm) error { return Exscan(ctx, c, []int{1, 2}, []int{0, 0, 0}, Sum) }, "exscan: receive buffer of 3 elements for 2"},
		{"zero op", func(c *Comm) error { return Scan(ctx, c, []int32{1}, []int32{0}, Op{}) }, "zero Op"},
		{"bitwise on floats", func(c *Comm) error { return ReduceScatterBlock(ctx, c, []float64{1, 2}, []float64{0}, BXor) }, "bxor is not defined on float64"},
		{"unknown algorithm", func(c *Comm) error { return Scan(ctx, c, []int{1}, []int{0}, Sum, WithAlgorithm("ring")) }, `no family "ring"`},
		{"forced ring, non-commutative", func(c *Comm) error {
			return ReduceScatterBlock(ctx, c, []int64{1, 2}, []int64{0}, first, WithAlgorithm("ring"))
		}, "needs a commutative operation"},
		{"forced halving, non-commutative", func(c *Comm) error {
			return ReduceScatter(ctx, c, []int64{1, 2}, []int64{0}, []int{1, 1}, first, WithAlgorithm("recursive-halving"))
		}, "needs a commutative operation"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Local(2, func(c *Comm) error {
				err := tc.call(c)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					return fmt.Errorf("rank %d: error %v, want %q", c.Rank(), err, tc.want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	// Exscan's rank 0 may pass no receive buffer; the table's choice
	// keeps rank order at every size.
	err := Local(3, func(c *Comm) error {
		for _, elems := range []int{1, 4 << 10, 256 << 10} {
			send := make([]int64, elems)
			for i := range send {
				send[i] = int64(c.Rank() + 7)
			}
			var recv []int64
			if c.Rank() > 0 {
				recv = make([]int64, elems)
			}
			if err := Exscan(context.Background(), c, send, recv, first); err != nil {
				return err
			}
			if c.Rank() > 0 && (recv[0] != 7 || recv[elems-1] != 7) {
				return fmt.Errorf("%d elements: rank %d has %d … %d, want rank 0's 7", elems, c.Rank(), recv[0], recv[elems-1])
			}
			blk := make([]int64, elems)
			if err := ReduceScatterBlock(context.Background(), c, slices.Repeat(send, 3), blk, first); err != nil {
				return err
			}
			if blk[0] != 7 || blk[elems-1] != 7 {
				return fmt.Errorf("%d elements: rank %d's block is %d … %d, want rank 0's 7", elems, c.Rank(), blk[0], blk[elems-1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReduceScatterCountsChange: calls of one vector length whose counts
// differ each get their own blocks (a communicator keeps a plan per
// layout, counts included), again when the counts come back.
func TestReduceScatterCountsChange(t *testing.T) {
	err := Local(3, func(c *Comm) error {
		ctx := context.Background()
		send := []int32{1, 2, 3, 4, 5, 6}
		for i, counts := range [][]int{{2, 0, 4}, {0, 4, 2}, {2, 2, 2}, {2, 0, 4}, {6, 0, 0}, {0, 4, 2}} {
			at := 0
			for r := 0; r < c.Rank(); r++ {
				at += counts[r]
			}
			got := make([]int32, counts[c.Rank()])
			if err := ReduceScatter(ctx, c, send, got, counts, Sum); err != nil {
				return err
			}
			for j := range got {
				if want := 3 * send[at+j]; got[j] != want {
					return fmt.Errorf("call %d, counts %v: rank %d has %v", i, counts, c.Rank(), got)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestScanSizesDisagree: ranks passing vectors of different lengths to
// Scan or ReduceScatterBlock get an error, not a hang — every rank but
// Scan's rank 0, whose part (one send) is done before anyone can tell.
func TestScanSizesDisagree(t *testing.T) {
	for _, op := range []string{"scan", "reducescatterblock"} {
		t.Run(op, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := Local(3, func(c *Comm) error {
				k := 4
				if c.Rank() == 1 {
					k = 5
				}
				var err error
				if op == "scan" {
					err = Scan(ctx, c, make([]int64, k), make([]int64, k), Sum)
				} else {
					err = ReduceScatterBlock(ctx, c, make([]int64, 3*k), make([]int64, k), Sum)
				}
				if err == nil && op == "scan" && c.Rank() == 0 {
					return nil
				}
				if !errors.Is(err, ErrSizeMismatch) && !errors.Is(err, ErrTruncate) && !errors.Is(err, ErrPeerLost) {
					return fmt.Errorf("rank %d: %v, want a size mismatch", c.Rank(), err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
