package bench

import (
	"fmt"
	"math/rand/v2"

	"github.com/commtune/commtune"
)

// soakHalo is a soak's halo exchanges: a periodic two-dimensional Cart of
// the world and, over it, one Halo per implementation and one left to the
// run-time selection, each on its own array. They are made once: a Halo
// and a Cart hold a Dup of their communicator for good (neither has a
// Free), so making them in steps would grow the job by design.
type soakHalo struct {
	cart    *commtune.Cart
	extents []int
	width   int
	comps   int
	halos   []*commtune.Halo
	names   []string
	data    [][]uint32
}

func newSoakHalo(world *commtune.Comm, seed uint64) (*soakHalo, error) {
	dims := make([]int, 2)
	if err := commtune.DimsCreate(world.Size(), dims); err != nil {
		return nil, err
	}
	cart, err := world.Cart(dims, []bool{true, true})
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 1<<63))
	h := &soakHalo{cart: cart, extents: []int{4 + rng.IntN(13), 4 + rng.IntN(13)}, width: 1 + rng.IntN(2), comps: 1 + rng.IntN(2)}
	cells := h.comps
	for _, e := range h.extents {
		cells *= e + 2*h.width
	}
	var opts [][]commtune.HaloOption
	for _, impl := range commtune.HaloImpls() {
		h.names = append(h.names, impl)
		opts = append(opts, []commtune.HaloOption{commtune.WithHaloImpl(impl)})
	}
	h.names = append(h.names, "selected")
	opts = append(opts, nil)
	for i := range opts {
		data := make([]uint32, cells)
		x, err := commtune.NewHalo(cart, data, h.extents, h.width, h.comps, opts[i]...)
		if err != nil {
			return nil, fmt.Errorf("halo %s: %w", h.names[i], err)
		}
		h.halos, h.data = append(h.halos, x), append(h.data, data)
	}
	return h, nil
}

// haloValue is what global cell (g0, g1)'s component k holds in a step.
func haloValue(key uint64, g0, g1, k int) uint32 {
	return uint32(mix64(key ^ uint64(g0)<<40 ^ uint64(g1)<<16 ^ uint64(k)))
}

// haloStep: one exchange of one of the halos, blocking (Exchange) or
// split (Start, Wait). Each interior cell holds a value of its global
// coordinates and the step, each halo cell this rank's sentinel; after the
// exchange, every cell, corners included, must hold the value of its
// global coordinates wrapped around the periodic grid.
func (s *soakRank) haloStep(c *commtune.Comm, rng *rand.Rand) (string, error) {
	h := s.halo
	i := rng.IntN(len(h.halos))
	split := rng.IntN(2) == 0
	name := "halo " + h.names[i]
	if split {
		name += " start/wait"
	}
	me := h.cart.Comm().Rank()
	coords, dims := h.cart.MyCoords(), h.cart.Dims()
	key := s.id(-1, i).key()
	sentinel := s.sentinel(me).key()
	ext, w := h.extents, h.width
	full := []int{ext[0] + 2*w, ext[1] + 2*w}
	global := []int{dims[0] * ext[0], dims[1] * ext[1]}
	data := h.data[i]
	// cell returns the value cell (x0, x1) of the local array must hold
	// after the exchange, and whether it is interior.
	cell := func(x0, x1, k int) (uint32, bool) {
		g0 := ((coords[0]*ext[0]+x0-w)%global[0] + global[0]) % global[0]
		g1 := ((coords[1]*ext[1]+x1-w)%global[1] + global[1]) % global[1]
		in := x0 >= w && x0 < w+ext[0] && x1 >= w && x1 < w+ext[1]
		return haloValue(key, g0, g1, k), in
	}
	for x0 := range full[0] {
		for x1 := range full[1] {
			for k := range h.comps {
				v, in := cell(x0, x1, k)
				if !in {
					v = haloValue(sentinel, x0, x1, k)
				}
				data[(x0*full[1]+x1)*h.comps+k] = v
			}
		}
	}
	var err error
	if split {
		if err = h.halos[i].Start(s.ctx); err == nil {
			err = h.halos[i].Wait(s.ctx)
		}
	} else {
		err = h.halos[i].Exchange(s.ctx)
	}
	if err != nil {
		return name, err
	}
	for x0 := range full[0] {
		for x1 := range full[1] {
			for k := range h.comps {
				at := (x0*full[1]+x1)*h.comps + k
				if v, _ := cell(x0, x1, k); data[at] != v {
					s.errs.other(s.step, name, me, "cell (%d, %d) component %d (byte offset %d) holds %#x, want %#x", x0, x1, k, 4*at, data[at], v)
					return name, nil
				}
			}
		}
	}
	return name, nil
}
