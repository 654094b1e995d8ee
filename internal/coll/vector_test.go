package coll

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// vlayout draws per-rank counts (some zero) and displacements with gaps,
// in elements.
func vlayout(rng *rand.Rand, n int) (counts, displs []int, total int) {
	counts, displs = make([]int, n), make([]int, n)
	for r := range counts {
		counts[r] = rng.IntN(5) * rng.IntN(40)
		displs[r] = total + rng.IntN(3)
		total = displs[r] + counts[r]
	}
	return counts, displs, total
}

// TestVectorVariants checks Scatterv, Gatherv, Allgatherv and Alltoallv
// against references for communicator sizes 1–17, every root, 1-, 4- and
// 8-byte elements.
func TestVectorVariants(t *testing.T) {
	for n := 1; n <= 17; n++ {
		for _, elem := range []int{1, 4, 8} {
			for root := 0; root < n; root++ {
				name := fmt.Sprintf("n=%d elem=%d root=%d", n, elem, root)
				rng := rand.New(rand.NewPCG(uint64(n), uint64(elem*100+root)))
				counts, displs, total := vlayout(rng, n)
				rooted := make([]byte, total*elem)
				for i := range rooted {
					rooted[i] = byte(rng.UintN(256))
				}
				blk := func(r int) []byte { return rooted[displs[r]*elem : (displs[r]+counts[r])*elem] }
				layout := func(r int) Layout {
					return Layout{Size: n, Rank: r, Root: root, Elem: elem, Counts: counts, Displs: displs}
				}
				// Scatterv: rank r gets block r of the root's buffer.
				in, out := make([][]byte, n), make([][]byte, n)
				scheds := make([]Schedule, n)
				for r := range scheds {
					scheds[r] = scattervFlat(layout(r))
					out[r] = make([]byte, counts[r]*elem)
				}
				in[root] = rooted
				if err := Simulate(scheds, in, out, nil); err != nil {
					t.Fatalf("scatterv %s: %v", name, err)
				}
				for r := range out {
					if !bytes.Equal(out[r], blk(r)) {
						t.Fatalf("scatterv %s: rank %d got the wrong block", name, r)
					}
				}
				// Gatherv and Allgatherv: the blocks back in place; gaps
				// stay as they were.
				for _, all := range []bool{false, true} {
					in, out := make([][]byte, n), make([][]byte, n)
					for r := range scheds {
						if all {
							scheds[r] = allgathervRing(layout(r))
						} else {
							scheds[r] = gathervFlat(layout(r))
						}
						in[r] = blk(r)
						if all || r == root {
							out[r] = make([]byte, total*elem)
						}
					}
					if err := Simulate(scheds, in, out, nil); err != nil {
						t.Fatalf("gatherv(all=%v) %s: %v", all, name, err)
					}
					for r := range out {
						if !all && r != root {
							continue
						}
						for q := 0; q < n; q++ {
							if got := out[r][displs[q]*elem : (displs[q]+counts[q])*elem]; !bytes.Equal(got, blk(q)) {
								t.Fatalf("gatherv(all=%v) %s: rank %d has the wrong block %d", all, name, r, q)
							}
						}
					}
				}
				if root > 0 {
					continue // Alltoallv has no root
				}
				// Alltoallv: sc[s][d] elements from s to d.
				sc, sd, rc, rd := make([][]int, n), make([][]int, n), make([][]int, n), make([][]int, n)
				for s := range sc {
					sc[s], sd[s] = make([]int, n), make([]int, n)
					rc[s], rd[s] = make([]int, n), make([]int, n)
				}
				for s := 0; s < n; s++ {
					for d := 0; d < n; d++ {
						sc[s][d] = rng.IntN(4) * rng.IntN(9)
						rc[d][s] = sc[s][d]
					}
				}
				in, out = make([][]byte, n), make([][]byte, n)
				for r := 0; r < n; r++ {
					tot := 0
					for d := 0; d < n; d++ { // send blocks in reverse order, with gaps
						q := n - 1 - d
						sd[r][q] = tot + 1
						tot = sd[r][q] + sc[r][q]
					}
					in[r] = make([]byte, tot*elem)
					for i := range in[r] {
						in[r][i] = byte(rng.UintN(256))
					}
					tot = 0
					for s := 0; s < n; s++ {
						rd[r][s] = tot
						tot += rc[r][s]
					}
					out[r] = make([]byte, tot*elem)
					scheds[r] = alltoallvPairwise(Layout{Size: n, Rank: r, Elem: elem, SendCounts: sc[r], SendDispls: sd[r], RecvCounts: rc[r], RecvDispls: rd[r]})
				}
				if err := Simulate(scheds, in, out, nil); err != nil {
					t.Fatalf("alltoallv %s: %v", name, err)
				}
				for d := 0; d < n; d++ {
					for s := 0; s < n; s++ {
						want := in[s][sd[s][d]*elem : (sd[s][d]+sc[s][d])*elem]
						if got := out[d][rd[d][s]*elem : (rd[d][s]+rc[d][s])*elem]; !bytes.Equal(got, want) {
							t.Fatalf("alltoallv %s: rank %d's block from %d differs", name, d, s)
						}
					}
				}
			}
		}
	}
}
