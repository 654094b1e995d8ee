package profile

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/commtune/commtune/internal/units"
)

// How a node pass moved an Alltoall's messages (Transport.Node's paths).
const (
	NodeRing = "ring" // through the shared-memory rings: two copies
	NodePull = "pull" // read in place by the receiver (CMA): one copy
)

// NodeOp is the collective a node pass times: an Alltoall of every rank
// of the node, each rank's block of the curve's size.
const NodeOp = "alltoall/pairwise"

// maxNodeRanks bounds the rank counts a profile's node passes name.
const maxNodeRanks = 1 << 12

// NodePullAt is when collectives of ranks on one node should pull their
// messages, as a node pass measured it: from From bytes (0: never) up to
// To (0: no bound), at Ranks ranks on CPUs processors.
type NodePullAt struct {
	From, To    int64
	Ranks, CPUs int
}

// Pulls reports whether a collective moving size bytes per block pulls.
func (a NodePullAt) Pulls(size int64) bool {
	return a.From > 0 && size >= a.From && (a.To == 0 || size < a.To)
}

// CollPull returns the block sizes where the node pass that ran most like
// a job of ranks ranks on cpus processors found pulled Alltoalls faster
// than ring ones: the pass on the same side of oversubscription (ranks >
// cpus), the nearest in ranks; the first range of sizes the envelope of
// the two curves gives to pulling. ok is false when no pass ran on that
// side.
func (t *Transport) CollPull(ranks, cpus int) (at NodePullAt, ok bool) {
	best := -1
	for key := range t.Node {
		n, err := strconv.Atoi(key)
		if err != nil || (n > t.NodeCPUs) != (ranks > cpus) {
			continue
		}
		if best < 0 || abs(n-ranks) < abs(best-ranks) || abs(n-ranks) == abs(best-ranks) && n < best {
			best = n
		}
	}
	if best < 0 {
		return NodePullAt{}, false
	}
	paths := t.Node[strconv.Itoa(best)]
	ring, pull := paths[NodeRing], paths[NodePull]
	if len(ring) == 0 || len(pull) == 0 {
		return NodePullAt{}, false
	}
	lo, hi := ring.Span()
	ranges, _ := Envelope(map[string]Curve{NodeRing: ring, NodePull: pull}, []string{NodeRing, NodePull}, lo, hi)
	at = NodePullAt{Ranks: best, CPUs: t.NodeCPUs}
	for i, r := range ranges {
		if r.Method != NodePull {
			continue
		}
		at.From = max(r.From, 1)
		if i+1 < len(ranges) {
			at.To = ranges[i+1].From
		}
		break
	}
	return at, true
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// NodeRanks returns the rank counts of t's node passes, in increasing
// order.
func (t *Transport) NodeRanks() []int {
	var out []int
	for key := range t.Node {
		if n, err := strconv.Atoi(key); err == nil {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// rankKey reads a key naming a number of ranks ("4"): 2 or more, as
// strconv.Itoa spells it.
func rankKey(key string) (int, bool) {
	n, err := strconv.Atoi(key)
	return n, err == nil && n >= 2 && n <= maxNodeRanks && strconv.Itoa(n) == key
}

// validateNode checks t's node passes.
func (t *Transport) validateNode(name string) error {
	if len(t.Node) > maxCurves {
		return invalid("transport %q: %d node passes", name, len(t.Node))
	}
	if len(t.Node) > 0 && (t.NodeCPUs < 1 || t.NodeCPUs > maxNodeRanks) {
		return invalid("transport %q: node passes on %d processors", name, t.NodeCPUs)
	}
	for key, paths := range t.Node {
		n, ok := rankKey(key)
		if !ok {
			return invalid("transport %q: a node pass of %q ranks", name, key)
		}
		if len(paths) > maxCurves {
			return invalid("transport %q: node pass of %d ranks over %d paths", name, n, len(paths))
		}
		for path, c := range paths {
			if err := c.validate(); err != nil {
				return invalid("%s node pass of %d ranks over %s: %v", name, n, path, err)
			}
		}
	}
	return nil
}

func (a NodePullAt) String() string {
	if a.From == 0 {
		return fmt.Sprintf("never (sampled with %d ranks on %d processors)", a.Ranks, a.CPUs)
	}
	to := ""
	if a.To > 0 {
		to = " up to " + units.FormatSize(a.To)
	}
	return fmt.Sprintf("from %s%s (sampled with %d ranks on %d processors)", units.FormatSize(a.From), to, a.Ranks, a.CPUs)
}
