package nodecoll

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// sumU64 adds little-endian uint64 words; it is not commutative in the
// tests' eyes (they check the order through cat instead).
func sumU64(dst, src []byte, _ bool) {
	for i := 0; i+8 <= len(dst); i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(dst[i:])+binary.LittleEndian.Uint64(src[i:]))
	}
}

// catFirst keeps the order of a reduction visible: dst = dst*16 + src on
// the first word (ranks below 16), which only the rank order gives.
func catFirst(dst, src []byte, srcFirst bool) {
	d, s := binary.LittleEndian.Uint64(dst), binary.LittleEndian.Uint64(src)
	if srcFirst {
		d, s = s, d
	}
	binary.LittleEndian.PutUint64(dst, d*16+s)
}

// group runs f on n goroutine ranks of one heap group and returns their
// errors.
func group(t *testing.T, n int, l Layout, f func(g *Group) error) []error {
	t.Helper()
	parts, bells := HeapParts(n, l), NewChanBells(n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		g, err := New(parts, r, l, &Waiter{Spin: 50 * time.Microsecond, Nap: time.Millisecond, Bell: bells})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { errs[r] = f(g) })
	}
	wg.Wait()
	return errs
}

func word(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func TestOperations(t *testing.T) {
	small := Layout{Slots: 2, SlotSize: 128}
	for _, l := range []Layout{DefaultLayout, small} {
		for n := 1; n <= 5; n++ {
			t.Run(fmt.Sprintf("slots=%d/n=%d", l.Slots, n), func(t *testing.T) {
				const calls = 300
				errs := group(t, n, l, func(g *Group) error {
					me := uint64(g.Rank())
					for i := range uint64(calls) {
						root := int(i % uint64(n))
						sig := Sig{i % 7, uint64(root)}
						var want uint64
						switch i % 7 {
						case 0:
							if err := g.Barrier(sig); err != nil {
								return err
							}
							continue
						case 1:
							buf := word(0)
							if g.Rank() == root {
								buf = word(i*100 + uint64(root))
							}
							if err := g.Bcast(sig, buf, root); err != nil {
								return err
							}
							if got := binary.LittleEndian.Uint64(buf); got != i*100+uint64(root) {
								return fmt.Errorf("call %d bcast: %d", i, got)
							}
							continue
						case 2, 3:
							out := word(0)
							var err error
							if i%7 == 2 {
								err = g.Allreduce(sig, word(me+1), out, catFirst)
							} else {
								err = g.Reduce(sig, word(me+1), out, root, catFirst)
							}
							if err != nil {
								return err
							}
							for r := range uint64(n) {
								want = want*16 + r + 1
							}
							if got := binary.LittleEndian.Uint64(out); (i%7 == 2 || g.Rank() == root) && got != want {
								return fmt.Errorf("call %d reduce: %x, want %x", i, got, want)
							}
						case 4:
							out := make([]byte, 8*n)
							if err := g.Allgather(sig, word(me+i), out); err != nil {
								return err
							}
							for r := range n {
								if got := binary.LittleEndian.Uint64(out[8*r:]); got != uint64(r)+i {
									return fmt.Errorf("call %d allgather: block %d is %d", i, r, got)
								}
							}
						case 5:
							in := make([]byte, 8*n)
							for r := range n {
								binary.LittleEndian.PutUint64(in[8*r:], uint64(r)*i)
							}
							out := word(0)
							if err := g.Scatter(sig, in, out, root); err != nil {
								return err
							}
							if got := binary.LittleEndian.Uint64(out); got != me*i {
								return fmt.Errorf("call %d scatter: %d", i, got)
							}
						case 6:
							out := word(99)
							if err := g.Scan(sig, word(me+1), out, catFirst, i%2 == 0); err != nil {
								return err
							}
							last := me + 1
							if i%2 == 0 {
								last = me
							}
							want = 0
							for r := range last {
								want = want*16 + r + 1
							}
							if last == 0 {
								want = 99
							}
							if got := binary.LittleEndian.Uint64(out); got != want {
								return fmt.Errorf("call %d scan (exclusive %t): %x, want %x", i, i%2 == 0, got, want)
							}
						}
					}
					return nil
				})
				for r, err := range errs {
					if err != nil {
						t.Errorf("rank %d: %v", r, err)
					}
				}
			})
		}
	}
}

// A root that broadcasts over and over runs ahead of a slow reader by at
// most Slots-1 calls, and every reader gets every call's data.
func TestBcastRunsAhead(t *testing.T) {
	l := Layout{Slots: 3, SlotSize: 128}
	const calls = 200
	errs := group(t, 3, l, func(g *Group) error {
		for i := range uint64(calls) {
			buf := word(i)
			if g.Rank() == 2 && i%10 == 0 {
				time.Sleep(100 * time.Microsecond) // a slow reader
			}
			if err := g.Bcast(Sig{1}, buf, 0); err != nil {
				return err
			}
			if got := binary.LittleEndian.Uint64(buf); got != i {
				return fmt.Errorf("call %d: %d", i, got)
			}
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// Ranks that disagree on a call's signature or size: every rank that
// reads a disagreeing part errs with ErrMismatch, and the others (a
// broadcast's root) fail their next call with ErrAborted.
func TestMismatch(t *testing.T) {
	cases := []struct {
		name string
		call func(g *Group) error
	}{
		{"allreduce size", func(g *Group) error {
			n := 8 * (1 + g.Rank()%2)
			return g.Allreduce(Sig{3}, make([]byte, n), make([]byte, n), sumU64)
		}},
		{"bcast signature", func(g *Group) error {
			return g.Bcast(Sig{1, uint64(g.Rank() / 2)}, make([]byte, 8), 0)
		}},
		// Ranks that disagree on the root so that none reads another's
		// part in the call: the next call finds it.
		{"bcast, every rank its own root", func(g *Group) error {
			return g.Bcast(Sig{1, uint64(g.Rank())}, make([]byte, 8), g.Rank())
		}},
		{"scatter, every rank its own root", func(g *Group) error {
			return g.Scatter(Sig{4, uint64(g.Rank())}, make([]byte, 8*g.Size()), make([]byte, 8), g.Rank())
		}},
		{"reduce, every rank a leaf", func(g *Group) error {
			root := (g.Rank() + 1) % g.Size()
			return g.Reduce(Sig{2, uint64(root)}, word(1), make([]byte, 8), root, sumU64)
		}},
		{"gather, every rank a leaf", func(g *Group) error {
			root := (g.Rank() + 1) % g.Size()
			return g.Gather(Sig{5, uint64(root)}, word(1), make([]byte, 8*g.Size()), root)
		}},
		{"barrier against allreduce", func(g *Group) error {
			if g.Rank() == 1 {
				return g.Barrier(Sig{0})
			}
			return g.Allreduce(Sig{3}, make([]byte, 8), make([]byte, 8), sumU64)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := group(t, 3, DefaultLayout, func(g *Group) error {
				err := tc.call(g)
				if err == nil {
					err = g.Barrier(Sig{0}) // the next call
				}
				return err
			})
			for r, err := range errs {
				if !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrAborted) {
					t.Errorf("rank %d: %v, want a mismatch or an abort", r, err)
				}
			}
		})
	}
}

// A rank that fails its wait (Check says so) stops every peer waiting
// for it.
func TestCheckAborts(t *testing.T) {
	stop := errors.New("context ended")
	parts := HeapParts(2, DefaultLayout)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		w := &Waiter{Spin: 10 * time.Microsecond, Nap: time.Millisecond}
		if r == 0 {
			deadline := time.Now().Add(20 * time.Millisecond)
			w.Check = func(int, time.Duration) error {
				if time.Now().After(deadline) {
					return stop
				}
				return nil
			}
		}
		g, err := New(parts, r, DefaultLayout, w)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if r == 1 {
				// Rank 1 is late for the first call, so rank 0's wait
				// ends first; rank 1 then finds rank 0 gone.
				time.Sleep(100 * time.Millisecond)
			}
			errs[r] = g.Barrier(Sig{0})
		})
	}
	wg.Wait()
	if !errors.Is(errs[0], stop) {
		t.Errorf("rank 0: %v, want %v", errs[0], stop)
	}
	if !errors.Is(errs[1], ErrAborted) {
		t.Errorf("rank 1: %v, want ErrAborted", errs[1])
	}
}

func TestNewRefuses(t *testing.T) {
	parts := HeapParts(2, DefaultLayout)
	cases := []struct {
		name  string
		parts [][]byte
		rank  int
		l     Layout
	}{
		{"one slot", parts, 0, Layout{Slots: 1, SlotSize: 128}},
		{"slot not whole lines", parts, 0, Layout{Slots: 2, SlotSize: 100}},
		{"rank out of range", parts, 2, DefaultLayout},
		{"short part", [][]byte{parts[0], parts[1][:64]}, 0, DefaultLayout},
		{"misaligned part", [][]byte{parts[0], parts[1][8:]}, 0, DefaultLayout},
	}
	for _, tc := range cases {
		if _, err := New(tc.parts, tc.rank, tc.l, &Waiter{Nap: time.Millisecond}); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// A rank still in a call the ranks agreed on when a peer left a later one
// finishes it with its data, and fails in the call the peer left: an
// abandon fails that call and the later ones, never the calls before it.
func TestAbortSparesEarlierCalls(t *testing.T) {
	errs := group(t, 3, DefaultLayout, func(g *Group) error {
		if g.Rank() == 2 {
			time.Sleep(20 * time.Millisecond) // late for the first call
		}
		buf := word(uint64(10 + g.Rank()))
		if err := g.Bcast(Sig{1, 0}, buf, 0); err != nil {
			return fmt.Errorf("call 1, agreed: %w", err)
		}
		if got := binary.LittleEndian.Uint64(buf); got != 10 {
			return fmt.Errorf("call 1: %d, want 10", got)
		}
		// Every rank its own root: none reads another's part.
		if err := g.Bcast(Sig{1, uint64(g.Rank())}, make([]byte, 8), g.Rank()); err != nil {
			return fmt.Errorf("call 2 returned %w, want nil: nothing was read", err)
		}
		err := g.Barrier(Sig{0})
		if !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrAborted) {
			return fmt.Errorf("call 3: %v, want a mismatch or an abort", err)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
