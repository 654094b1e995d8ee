package boot

import (
	"fmt"
	"strconv"
	"strings"
)

// parseProcessMapping reads PMI_process_mapping, the placement Hydra and
// Slurm publish: "(vector,(start,nodes,ranks),...)" — each block puts
// `ranks` consecutive ranks on each of `nodes` nodes from node `start` on,
// and the blocks repeat until every rank is placed, so "(vector,(0,2,2))"
// is block placement (0 0 1 1) and "(vector,(0,2,1))" cyclic (0 1 0 1).
// It returns each rank's node index.
func parseProcessMapping(s string, size int) ([]int, error) {
	bad := func(why string) ([]int, error) {
		return nil, fmt.Errorf("%w: PMI_process_mapping %q: %s", ErrPMI, clip(s), why)
	}
	t := strings.ReplaceAll(s, " ", "")
	if !strings.HasPrefix(t, "(vector,") || !strings.HasSuffix(t, ")") {
		return bad("want (vector,(start,nodes,ranks),...)")
	}
	t = strings.TrimSuffix(strings.TrimPrefix(t, "(vector,"), ")")
	type block struct{ start, nodes, ranks int }
	var blocks []block
	perCycle := 0
	for t != "" {
		if !strings.HasPrefix(t, "(") {
			return bad("a block does not start with (")
		}
		end := strings.IndexByte(t, ')')
		if end < 0 {
			return bad("a block is not closed")
		}
		parts := strings.Split(t[1:end], ",")
		if len(parts) != 3 {
			return bad("a block has not 3 numbers")
		}
		var v [3]int
		for i, p := range parts {
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n > MaxSize {
				return bad(fmt.Sprintf("%q is not a count from 0 to %d", p, MaxSize))
			}
			v[i] = n
		}
		blocks = append(blocks, block{v[0], v[1], v[2]})
		perCycle += v[1] * v[2]
		t = strings.TrimPrefix(t[end+1:], ",")
	}
	if perCycle == 0 {
		return bad("places no rank")
	}
	nodes := make([]int, 0, size)
	for len(nodes) < size {
		for _, b := range blocks {
			for n := b.start; n < b.start+b.nodes; n++ {
				for r := 0; r < b.ranks && len(nodes) < size; r++ {
					nodes = append(nodes, n)
				}
			}
		}
	}
	return nodes, nil
}
