package commtune

import (
	"sync"

	"github.com/commtune/commtune/internal/halo"
	"github.com/commtune/commtune/internal/tune"
)

// The halo implementations (halo.Impls) are entries of a tune.Registry,
// named and characterised as ADCL's neighbourhood exchanges are, so that
// a selector reasons on their attributes.

// haloEntry returns m as its registry entry.
func haloEntry(m halo.Impl) tune.Entry[halo.Impl] {
	return tune.Entry[halo.Impl]{Name: m.Name(), Impl: m, Attrs: []tune.Attr{
		{Key: halo.AttrPartners, Value: string(m.Partners)},
		{Key: halo.AttrPrimitive, Value: string(m.Primitive)},
		{Key: halo.AttrData, Value: string(m.Data)},
	}}
}

var haloRegistry = sync.OnceValue(func() *tune.Registry[halo.Impl] {
	r := new(tune.Registry[halo.Impl])
	for _, m := range halo.Impls {
		if err := r.Add(haloEntry(m)); err != nil {
			panic(err) // two entries of halo.Impls share a name
		}
	}
	return r
})
