package halo

import (
	"sync"

	"github.com/commtune/commtune/internal/tune"
)

// The halo implementations (Impls) are entries of a tune.Registry,
// named and characterised as ADCL's neighbourhood exchanges are, so that
// a selector reasons on their attributes.

// entry returns m as its registry entry.
func entry(m Impl) tune.Entry[Impl] {
	return tune.Entry[Impl]{Name: m.Name(), Impl: m, Attrs: []tune.Attr{
		{Key: AttrPartners, Value: string(m.Partners)},
		{Key: AttrPrimitive, Value: string(m.Primitive)},
		{Key: AttrData, Value: string(m.Data)},
	}}
}

// Registry returns the implementations as a selector's entries, in the
// order of Impls.
var Registry = sync.OnceValue(func() *tune.Registry[Impl] {
	r := new(tune.Registry[Impl])
	for _, m := range Impls {
		if err := r.Add(entry(m)); err != nil {
			panic(err) // two entries of Impls share a name
		}
	}
	return r
})
