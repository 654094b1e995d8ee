package coll

import (
	"strconv"
	"sync"

	"github.com/commtune/commtune/internal/tune"
)

// Attribute keys of the entries of Registry.
const (
	AttrOp          = "op"          // the operation, e.g. "bcast"
	AttrFamily      = "family"      // the family, e.g. "binomial", "reduce-bcast", "ring"
	AttrShape       = "shape"       // the tree, for algorithms on one (seed 001 §3.1)
	AttrFanout      = "k"           // the k of a k-nomial tree
	AttrSegment     = "seg"         // the pipeline segment, "none" or e.g. "16K" (seed 001 §3.2), for segmented families
	AttrCommutative = "commutative" // "true" if it needs a commutative reduction, else "false"
	AttrPull        = "pull"        // "true" if receivers read messages in place (Algorithm.Pull)
)

// Registry returns every algorithm of every operation, as Algorithms lists
// them and in that order followed by the operation's direct and hierarchical ones, each under its Name with its attributes (the
// Attr* keys; a key that does not apply is absent): what a selector
// reasons on. The registry is built once and shared; callers must not Add
// to it.
func Registry() *tune.Registry[Algorithm] { return registry() }

var registry = sync.OnceValue(func() *tune.Registry[Algorithm] {
	r := new(tune.Registry[Algorithm])
	for _, op := range Operations {
		algs := Algorithms(op)
		if a, ok := DirectAlgorithm(op); ok {
			algs = append(algs, a)
		}
		if a, ok := HierarchicalAlgorithm(op); ok {
			algs = append(algs, a)
		}
		for _, a := range algs {
			if err := r.Add(a.Entry()); err != nil {
				panic(err) // a bug in familyTable: two algorithms of one name
			}
		}
	}
	return r
})

// Entry returns a as a registry entry: its name and its attributes, as
// Registry holds them; for an algorithm Registry does not list (a k-nomial
// tree of another k, a segment size outside Segments) too.
func (a Algorithm) Entry() tune.Entry[Algorithm] {
	attrs := []tune.Attr{{Key: AttrOp, Value: string(a.Op)}, {Key: AttrFamily, Value: a.Family}}
	f := a.family()
	if f != nil && len(f.shapes) > 0 {
		attrs = append(attrs, tune.Attr{Key: AttrShape, Value: string(a.Shape)})
	}
	if a.Shape == Knomial {
		attrs = append(attrs, tune.Attr{Key: AttrFanout, Value: strconv.Itoa(a.Fanout)})
	}
	if f != nil && f.segmented {
		attrs = append(attrs, tune.Attr{Key: AttrSegment, Value: segmentText(a.Segment)})
	}
	attrs = append(attrs, tune.Attr{Key: AttrCommutative, Value: strconv.FormatBool(f != nil && f.commutative)})
	if a.Pull {
		attrs = append(attrs, tune.Attr{Key: AttrPull, Value: "true"})
	}
	return tune.Entry[Algorithm]{Name: a.Name(), Attrs: attrs, Impl: a}
}
