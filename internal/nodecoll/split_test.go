package nodecoll

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// splitCall makes o as one call (the blocking operation) or in two parts,
// with a pause, a look at Ready or nothing between them, as rng says.
func splitCall(g *Group, rng *rand.Rand, sig Sig, o *Op) error {
	if rng.IntN(2) == 0 {
		switch o.Kind {
		case KindBarrier:
			return g.Barrier(sig)
		case KindBcast:
			return g.Bcast(sig, o.Out, o.Root)
		case KindReduce:
			return g.Reduce(sig, o.In, o.Out, o.Root, o.Red)
		case KindAllreduce:
			return g.Allreduce(sig, o.In, o.Out, o.Red)
		case KindAllgather:
			return g.Allgather(sig, o.In, o.Out)
		case KindGather:
			return g.Gather(sig, o.In, o.Out, o.Root)
		case KindScatter:
			return g.Scatter(sig, o.In, o.Out, o.Root)
		case KindScan, KindExscan:
			return g.Scan(sig, o.In, o.Out, o.Red, o.Kind == KindExscan)
		}
	}
	for !g.CanBegin() {
		time.Sleep(time.Microsecond)
	}
	s, over, err := g.Post(sig, o)
	if over {
		return err
	}
	switch rng.IntN(3) {
	case 0:
		time.Sleep(time.Duration(rng.IntN(20)) * time.Microsecond)
	case 1:
		for !g.Ready(s, o) {
			time.Sleep(time.Microsecond)
		}
	}
	return g.Finish(s, o)
}

// TestSplitCalls runs long random sequences of every operation, each rank
// making each call whole or in two parts as it draws, and checks every
// result with rank- and call-specific values.
func TestSplitCalls(t *testing.T) {
	for _, l := range []Layout{{Slots: 4, SlotSize: 256}, DefaultLayout} {
		for _, n := range []int{1, 2, 3, 5} {
			t.Run(fmt.Sprintf("slots=%d/n=%d", l.Slots, n), func(t *testing.T) {
				const calls = 2000
				seed := uint64(time.Now().UnixNano())
				errs := group(t, n, l, func(g *Group) error {
					plan := rand.New(rand.NewPCG(seed, 1)) // the same calls on every rank
					rng := rand.New(rand.NewPCG(seed, uint64(2+g.Rank())))
					me := uint64(g.Rank())
					for i := range uint64(calls) {
						root := plan.IntN(n)
						kind := Kind(1 + plan.IntN(int(KindExscan)))
						sig := Sig{uint64(kind), uint64(root)}
						o := &Op{Kind: kind, Root: root, Red: catFirst}
						var want []byte
						switch kind {
						case KindBarrier:
						case KindBcast:
							o.Out = word(0)
							if g.Rank() == root {
								o.Out = word(i*100 + uint64(root))
							}
							want = word(i*100 + uint64(root))
						case KindReduce, KindAllreduce:
							o.In, o.Out = word(me+1+i%3), word(0)
							var v uint64
							for r := range uint64(n) {
								v = v*16 + r + 1 + i%3
							}
							if kind == KindAllreduce || g.Rank() == root {
								want = word(v)
							}
						case KindAllgather, KindGather:
							o.In, o.Out = word(me*1000+i), make([]byte, 8*n)
							if kind == KindAllgather || g.Rank() == root {
								for r := range uint64(n) {
									want = binary.LittleEndian.AppendUint64(want, r*1000+i)
								}
							}
						case KindScatter:
							o.In, o.Out = make([]byte, 8*n), word(0)
							for r := range n {
								binary.LittleEndian.PutUint64(o.In[8*r:], uint64(r)*7+i)
							}
							want = word(me*7 + i)
						case KindScan, KindExscan:
							o.In, o.Out = word(me+1), word(99)
							last := me + 1
							if kind == KindExscan {
								last = me
							}
							var v uint64
							for r := range last {
								v = v*16 + r + 1
							}
							if last == 0 {
								v = 99
							}
							want = word(v)
						}
						if err := splitCall(g, rng, sig, o); err != nil {
							return fmt.Errorf("call %d (kind %d, root %d): %w", i, kind, root, err)
						}
						if want != nil && string(o.Out) != string(want) {
							return fmt.Errorf("call %d (kind %d, root %d): got %x, want %x", i, kind, root, o.Out, want)
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

// TestPostedCallNeedsNoFinish: once every rank has posted an Allreduce,
// each finishes it whatever the others do meanwhile — here rank 0 waits,
// between its two parts, for every other rank to have finished.
func TestPostedCallNeedsNoFinish(t *testing.T) {
	const n = 3
	var others sync.WaitGroup
	others.Add(n - 1)
	errs := group(t, n, DefaultLayout, func(g *Group) error {
		for i := range uint64(50) {
			in, out := word(uint64(g.Rank())+i), word(0)
			o := &Op{Kind: KindAllreduce, In: in, Out: out, Red: sumU64}
			if g.Rank() != 0 {
				if err := g.Allreduce(Sig{3}, in, out, sumU64); err != nil {
					return err
				}
				others.Done()
			} else {
				s, _, err := g.Post(Sig{3}, o)
				if err != nil {
					return err
				}
				others.Wait() // the others finish without this rank's Finish
				others.Add(n - 1)
				if err := g.Finish(s, o); err != nil {
					return err
				}
			}
			if got, want := binary.LittleEndian.Uint64(out), uint64(n*(n-1)/2)+n*i; got != want {
				return fmt.Errorf("call %d: %d, want %d", i, got, want)
			}
			if err := g.Barrier(Sig{9}); err != nil { // keeps the WaitGroup's rounds apart
				return err
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

// TestCanBegin: a root that broadcasts ahead of a reader that does not
// come cannot begin once its slots are all in use, and can again once
// the reader has caught up.
func TestCanBegin(t *testing.T) {
	l := Layout{Slots: 4, SlotSize: 128}
	parts := HeapParts(2, l)
	w := &Waiter{Spin: time.Millisecond, Nap: time.Millisecond}
	root, _ := New(parts, 0, l, w)
	reader, _ := New(parts, 1, l, w)
	sig := Sig{1}
	posted := 0
	for ; root.CanBegin(); posted++ {
		if posted > 2*l.Slots {
			t.Fatalf("the root began %d calls the reader never read", posted)
		}
		if _, over, err := root.Post(sig, &Op{Kind: KindBcast, Out: word(uint64(posted))}); !over || err != nil {
			t.Fatalf("bcast root's post: over %t, %v", over, err)
		}
	}
	if posted < l.Slots-1 {
		t.Errorf("the root began %d calls before it could begin no more, want at least %d", posted, l.Slots-1)
	}
	for i := range posted {
		buf := word(0)
		if err := reader.Bcast(sig, buf, 0); err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint64(buf); got != uint64(i) {
			t.Fatalf("reader's call %d: %d", i, got)
		}
	}
	if !root.CanBegin() {
		t.Error("the root cannot begin after the reader caught up")
	}
}
