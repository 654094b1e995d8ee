package comm

import (
	"fmt"
	"testing"

	"github.com/commtune/commtune/internal/coll"
)

// TestSampledTable: where the profile's sampled table applies (members
// sharing memory), it decides before the fixed table, the lottery draws
// among its close rivals, and a call it has no point for, or one it
// cannot serve, falls back; where it does not apply nothing changes.
func TestSampledTable(t *testing.T) {
	must := func(op coll.Operation, spec string) coll.Algorithm {
		a, err := coll.Parse(op, spec)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	ring, raben := must(coll.OpAllreduce, "ring"), must(coll.OpAllreduce, "rabenseifner")
	rd, flat := must(coll.OpAllreduce, "recursive-doubling"), must(coll.OpAllreduce, "reduce-bcast:flat")
	tab := coll.NewTable()
	tab.Add(coll.OpAllreduce, 2, []coll.TablePoint{{Bytes: 1 << 20,
		Ranked: []coll.Algorithm{raben, ring, rd, flat}, MeanUS: []float64{100, 104, 108, 300}}})
	for _, onNode := range []bool{true, false} {
		t.Run(fmt.Sprintf("on node %t", onNode), func(t *testing.T) {
			runApart(t, 2, func(c *Comm) error {
				c.ep.CollTable = tab
				c.onNode.set(onNode)
				check := func(what string, got, want coll.Algorithm) {
					if got != want {
						t.Errorf("%s: %s, want %s", what, got.Name(), want.Name())
					}
				}
				a, auto, err := c.Algorithm(coll.OpAllreduce, 1<<20, true, Options{})
				if err != nil || !auto {
					return fmt.Errorf("Algorithm: %v (auto %t)", err, auto)
				}
				fixed := coll.Decide(coll.OpAllreduce, 2, 1<<20, true)
				if onNode {
					check("the sampled choice", a, raben)
				} else {
					check("off the node, the fixed choice", a, fixed)
				}
				a, _, _ = c.Algorithm(coll.OpAllreduce, 1<<20, false, Options{})
				check("non-commutative", a, map[bool]coll.Algorithm{true: rd, false: coll.Decide(coll.OpAllreduce, 2, 1<<20, false)}[onNode])
				a, _, _ = c.Algorithm(coll.OpBcast, 1<<20, false, Options{})
				check("no point for the operation", a, coll.Decide(coll.OpBcast, 2, 1<<20, false))
				cands := c.candidates(coll.OpAllreduce, 1<<20, true)
				if onNode {
					if len(cands) != 3 || cands[0] != raben || cands[1] != ring || cands[2] != rd {
						t.Errorf("lottery candidates %v, want the rivals within %v of the fastest", cands, coll.RivalsWithin)
					}
				} else if cands[0] != fixed {
					t.Errorf("off the node, lottery candidates %v start elsewhere than the fixed choice", cands)
				}
				return nil
			})
		})
	}
}
