package nodecoll

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestSparseProgress runs long mixed sequences of calls in which ranks
// that give nothing publish one call in Slots/4 (Bcast and Scatter
// readers, Reduce and Gather roots), with random roots and random slow
// ranks: no call waits forever for a slot's word that its owner never
// writes, and every result is right.
func TestSparseProgress(t *testing.T) {
	for _, l := range []Layout{{Slots: 4, SlotSize: 128}, {Slots: 8, SlotSize: 128}, {Slots: 16, SlotSize: 128}} {
		for _, n := range []int{2, 3, 5} {
			t.Run(fmt.Sprintf("slots=%d/n=%d", l.Slots, n), func(t *testing.T) {
				const calls = 3000
				seed := uint64(time.Now().UnixNano())
				errs := group(t, n, l, func(g *Group) error {
					plan := rand.New(rand.NewPCG(seed, 1)) // the same calls on every rank
					delay := rand.New(rand.NewPCG(seed, uint64(2+g.Rank())))
					me := uint64(g.Rank())
					for i := range uint64(calls) {
						if delay.IntN(200) == 0 {
							time.Sleep(50 * time.Microsecond) // a slow rank now and then
						}
						root := plan.IntN(n)
						var err error
						switch op := plan.IntN(6); op {
						case 0, 1: // runs of broadcasts: the readers give nothing
							buf := word(0)
							if g.Rank() == root {
								buf = word(i)
							}
							err = g.Bcast(Sig{1, uint64(root)}, buf, root)
							if err == nil && binary.LittleEndian.Uint64(buf) != i {
								err = fmt.Errorf("bcast %d: got %d", i, binary.LittleEndian.Uint64(buf))
							}
						case 2: // reduce: the root gives nothing
							out := make([]byte, 8)
							err = g.Reduce(Sig{2, uint64(root)}, word(me+i), out, root, sumU64)
							want := uint64(n)*i + uint64(n*(n-1)/2)
							if err == nil && g.Rank() == root && binary.LittleEndian.Uint64(out) != want {
								err = fmt.Errorf("reduce %d: got %d, want %d", i, binary.LittleEndian.Uint64(out), want)
							}
						case 3: // gather: the root gives nothing
							out := make([]byte, 8*n)
							err = g.Gather(Sig{3, uint64(root)}, word(me), out, root)
							for r := 0; err == nil && g.Rank() == root && r < n; r++ {
								if got := binary.LittleEndian.Uint64(out[8*r:]); got != uint64(r) {
									err = fmt.Errorf("gather %d: block %d holds %d", i, r, got)
								}
							}
						case 4: // scatter: the readers give nothing
							var in []byte
							if g.Rank() == root {
								for r := range n {
									in = binary.LittleEndian.AppendUint64(in, i+uint64(r))
								}
							}
							out := make([]byte, 8)
							err = g.Scatter(Sig{4, uint64(root)}, in, out, root)
							if err == nil && binary.LittleEndian.Uint64(out) != i+me {
								err = fmt.Errorf("scatter %d: got %d", i, binary.LittleEndian.Uint64(out))
							}
						default:
							err = g.Barrier(Sig{5})
						}
						if err != nil {
							return fmt.Errorf("call %d: %w", i, err)
						}
					}
					return nil
				})
				for r, err := range errs {
					if err != nil {
						t.Errorf("rank %d (seed %d): %v", r, seed, err)
					}
				}
			})
		}
	}
}
